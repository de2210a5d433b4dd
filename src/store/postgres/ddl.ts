/**
 * Table DDL on PostgreSQL: the types and defaults of a plan, its foreign keys resolved, and
 * the one place a CREATE TABLE statement is written.
 *
 * @module
 */

import { invalidDefinition, type PlannedColumn, type TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError, type ErrorDetail } from "../../errors.ts";
import type { Session } from "./database.ts";
import { checkDefault } from "./defaults.ts";
import { findTable, META, recordOrigin, recordTable } from "./metadata.ts";
import { recordConstraints } from "./metadata_constraints.ts";
import { constraintRecords } from "../shared/constraint_records.ts";
import {
  type ResolvedForeignKey,
  resolveForeignKeys as resolveKeys,
} from "../shared/foreign_keys.ts";
import { describeTables } from "./metadata_describe.ts";
import { qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import { postgresType } from "./types.ts";
import { createTableSql as createShapeSql, type TableShapeSql } from "../shared/table_ddl.ts";

/**
 * The hidden column every table carries for its insertion order: PostgreSQL has no stable
 * row position (`ctid` moves on UPDATE and VACUUM FULL), and records of a table without a
 * primary key are read, and walked by cursor, in insertion order (record_filters.ts). A
 * `bigint GENERATED ALWAYS AS IDENTITY`, so inserts that name their columns fill it without
 * knowing of it; it starts with a control character, which no user column name may contain
 * (DuckDB's `PLACEHOLDER_COLUMN` convention), and has no metadata row, so descriptions leave
 * it out. Inserts must name their columns (never `INSERT … SELECT *` or `COPY` without a
 * column list); a rebuild that copies rows keeps it with `OVERRIDING SYSTEM VALUE`.
 */
export const INSERTION_COLUMN = "\u0001order";

/**
 * PostgreSQL's limit of columns a table: the places of dropped columns count toward it
 * until the table is rewritten.
 */
export const PG_COLUMN_PLACES = 1600;

/**
 * Most columns a table may have on PostgreSQL: {@link PG_COLUMN_PLACES}, less the one
 * {@link INSERTION_COLUMN} takes.
 */
export const PG_MAX_COLUMNS = PG_COLUMN_PLACES - 1;

/**
 * Longest name PostgreSQL keeps, in bytes (NAMEDATALEN less one): it cuts a longer one
 * without a word, so two names could become one, or a column lose the name it was given.
 */
export const PG_MAX_NAME_BYTES = 63;

/** A plan's columns as PostgreSQL takes them: each one's type, and its checked default. */
export interface CheckedColumns {
  /** PostgreSQL's canonical type of each column, in order. */
  readonly types: readonly string[];
  readonly defaults: ReadonlyMap<PlannedColumn, string>;
}

/**
 * Maps every column's type (types.ts) and checks every default with PostgreSQL, or throws
 * 422 naming every problem: a type PostgreSQL lacks is named with the one to use instead.
 * Probes that fail abort a transaction, so this runs on a session of its own, or inside a
 * transaction on a `probing` one.
 */
export async function checkColumns(session: Session, plan: TablePlan): Promise<CheckedColumns> {
  const problems: ErrorDetail[] = [];
  const defaults = new Map<PlannedColumn, string>();
  const types: string[] = [];
  for (const column of plan.columns) {
    const type = postgresType(column.type);
    if (typeof type !== "string") {
      problems.push({ column: column.name, message: `Column "${column.name}": ${type.problem}` });
      types.push("");
      continue;
    }
    types.push(type);
    if (column.default === null) continue;
    const checked = await checkDefault(session, column.default, type);
    if (typeof checked === "string") defaults.set(column, checked);
    else {
      problems.push({
        column: column.name,
        message: `Default of column "${column.name}" ${checked.problem}`,
      });
    }
  }
  if (problems.length > 0) throw invalidDefinition(plan.ref.name, problems);
  return { types, defaults };
}

/** Creates the table, its sequences and its metadata; `checked` comes from {@link checkColumns}. */
export async function buildTable(
  session: Session,
  ref: TableRef,
  plan: TablePlan,
  checked: CheckedColumns,
): Promise<Table> {
  const problems: ErrorDetail[] = [];
  const references = await resolveForeignKeys(session, ref, plan, problems);
  if (problems.length > 0) throw invalidDefinition(ref.name, problems);

  const defaults = new Map(checked.defaults);
  const sequences = new Map<PlannedColumn, string>();
  for (const [i, column] of plan.columns.entries()) {
    if (!column.type.serial) continue;
    const sequence = await createSequence(session, ref, column.name, checked.types[i]!);
    sequences.set(column, sequence.name);
    defaults.set(column, sequence.defaultSql);
  }

  const sql = createTableSql(ref, {
    columns: plan.columns.map((column, i) => ({
      name: column.name,
      typeSql: checked.types[i]!,
      defaultSql: defaults.get(column),
      nullable: column.nullable,
    })),
    primaryKey: plan.primaryKey?.columns,
    unique: plan.unique.map((key) => key.columns),
    foreignKeys: references,
  });
  try {
    await session.run(sql);
  } catch (error) {
    const said = error instanceof Error ? error.message : String(error);
    throw ApiError.unprocessable(`Cannot create table "${ref.name}": ${said}`);
  }
  for (const [column, sequence] of sequences) {
    await ownSequence(session, ref, sequence, column.name);
  }

  const columnNames = plan.columns.map((c) => c.name);
  const tableId = await recordTable(session, ref, columnNames);
  const idOf = (name: string) => columnNames.findIndex((n) => nameKey(n) === nameKey(name)) + 1;
  await recordConstraints(
    session,
    tableId,
    constraintRecords(plan, references, tableId, idOf),
  );
  if (sequences.size > 0) {
    await session.run(
      `INSERT INTO ${META}.sequences (table_id, column_id, schema_name, sequence_name)
       SELECT $1, id, $2, name FROM unnest($3::integer[], $4::text[]) AS s(id, name)`,
      [
        tableId,
        ref.schema,
        [...sequences.keys()].map((c) => idOf(c.name)),
        [...sequences.values()],
      ],
    );
  }
  if (plan.template) await recordOrigin(session, tableId, plan.template);
  return (await describeTables(session, [{ id: tableId, ...ref }]))[0]!;
}

export type { ResolvedForeignKey };

/** Finds each foreign key's target and checks it is a single-column key there. */
export function resolveForeignKeys(
  session: Session,
  ref: TableRef,
  plan: TablePlan,
  problems: ErrorDetail[],
): Promise<ResolvedForeignKey[]> {
  return resolveKeys(ref, plan, problems, async (reference) => {
    const row = await findTable(session, reference);
    return row && { row, table: (await describeTables(session, [row]))[0]! };
  });
}

/**
 * Creates the sequence new serial column `column` of table `ref` is to draw from, of `type`,
 * under a free name; gives that name and the column's default. Once the column exists,
 * {@link ownSequence} ties the sequence to it.
 */
export async function createSequence(
  session: Session,
  ref: TableRef,
  column: string,
  type: string,
): Promise<{ name: string; defaultSql: string }> {
  const name = await freeSequenceName(session, ref.schema, `${ref.name}_${column}_seq`);
  const sequence = qualified(ref.schema, name);
  await session.run(`CREATE SEQUENCE ${sequence} AS ${type}`);
  return { name, defaultSql: `nextval(${quoteLiteral(sequence)}::regclass)` };
}

/** Makes column `column` of table `ref` own sequence `name`, which then goes with it. */
export async function ownSequence(
  session: Session,
  ref: TableRef,
  name: string,
  column: string,
): Promise<void> {
  await session.run(
    `ALTER SEQUENCE ${qualified(ref.schema, name)} OWNED BY ${qualified(ref.schema, ref.name)}.${
      quoteIdent(column)
    }`,
  );
}

/** `wanted` made a sequence name free in `schema` (any relation's name counts). */
export async function freeSequenceName(
  session: Session,
  schema: string,
  wanted: string,
): Promise<string> {
  const base = wanted.replaceAll(/[^A-Za-z0-9_]/g, "_").slice(0, 58);
  const rows = await session.rows(
    `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND lower(c.relname) LIKE lower($2) || '%'`,
    [schema, base],
  );
  const taken = new Set(rows.map((r) => (r.relname as string).toLowerCase()));
  for (let n = 1;; n++) {
    const candidate = n === 1 ? base : `${base}_${n}`;
    if (!taken.has(candidate.toLowerCase())) return candidate;
  }
}

export type { TableShapeSql };

/** The CREATE TABLE statement for a shape, with the hidden {@link INSERTION_COLUMN} last. */
export function createTableSql(ref: TableRef, shape: TableShapeSql): string {
  return createShapeSql(
    ref,
    shape,
    `${quoteIdent(INSERTION_COLUMN)} bigint GENERATED ALWAYS AS IDENTITY`,
  );
}
