/**
 * Table DDL on PostgreSQL: the types and defaults of a plan, its foreign keys resolved, and
 * the one place a CREATE TABLE statement is written.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import type { Session } from "./database.ts";
import { checkDefault } from "./defaults.ts";
import { findTable } from "./metadata.ts";
import { recordTable } from "../shared/metadata_tables.ts";
import { describeTables } from "./metadata_describe.ts";
import { qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import { postgresType } from "./types.ts";
import { createTableSql as createShapeSql, type TableShapeSql } from "../shared/table_ddl.ts";
import {
  buildTable as buildWith,
  checkColumns as checkWith,
  type CheckedColumns,
  type TableDialect,
} from "../shared/table_creation.ts";

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

/** PostgreSQL's part of creating a table (shared/table_creation.ts). */
export const TABLE_DIALECT: TableDialect<Session> = {
  columnType(_session, column) {
    const type = postgresType(column.type);
    return Promise.resolve(
      typeof type === "string"
        ? type
        : { column: column.name, message: `Column "${column.name}": ${type.problem}` },
    );
  },
  checkDefault,
  findTable,
  describeTables,
  createTableSql,
  createSequence,
  ownSequence,
  message: (error) => error instanceof Error ? error.message : String(error),
  recordTable,
};

/**
 * Maps every column's type (types.ts) and checks every default with PostgreSQL, or throws
 * 422 naming every problem: a type PostgreSQL lacks is named with the one to use instead.
 * Probes that fail abort a transaction, so this runs on a session of its own, or inside a
 * transaction on a `probing` one.
 */
export function checkColumns(session: Session, plan: TablePlan): Promise<CheckedColumns> {
  return checkWith(session, TABLE_DIALECT, plan);
}

/** Creates the table, its sequences and its metadata; `checked` comes from {@link checkColumns}. */
export function buildTable(
  session: Session,
  ref: TableRef,
  plan: TablePlan,
  checked: CheckedColumns,
): Promise<Table> {
  return buildWith(session, TABLE_DIALECT, ref, plan, checked);
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

/** The CREATE TABLE statement for a shape, with the hidden {@link INSERTION_COLUMN} last. */
export function createTableSql(ref: TableRef, shape: TableShapeSql): string {
  return createShapeSql(
    ref,
    shape,
    `${quoteIdent(INSERTION_COLUMN)} bigint GENERATED ALWAYS AS IDENTITY`,
  );
}
