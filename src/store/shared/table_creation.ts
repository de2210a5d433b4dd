/**
 * Creating a table from a plan, the same on both engines: types and defaults checked, foreign
 * keys resolved, sequences made, CREATE TABLE run, metadata written. The engine gives its
 * types, default check, sequences, hidden column and lookups ({@link TableDialect}).
 *
 * @module
 */

import { invalidDefinition, type PlannedColumn, type TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError, type ErrorDetail } from "../../errors.ts";
import { constraintRecords, recordConstraints } from "./constraint_records.ts";
import type { ListSession, TableRow } from "./core.ts";
import { type ResolvedForeignKey, resolveForeignKeys } from "./foreign_keys.ts";
import { recordOrigin, recordSequences } from "./metadata_rows.ts";
import type { TableShapeSql } from "./table_ddl.ts";

/** What one engine does to create a table. */
export interface TableDialect<S> {
  /** A planned column's type as the engine writes it in DDL, or the problem with it. */
  columnType(session: S, column: PlannedColumn): Promise<string | ErrorDetail>;
  /** A default checked for `type`: the expression as the engine renders it, or the problem. */
  checkDefault(session: S, expression: string, type: string): Promise<string | { problem: string }>;
  findTable(session: S, ref: TableRef): Promise<TableRow | undefined>;
  describeTables(session: S, tables: readonly TableRow[]): Promise<Table[]>;
  /** The CREATE TABLE statement of a shape, with whatever hidden column the engine adds. */
  createTableSql(ref: TableRef, shape: TableShapeSql): string;
  /** Creates the sequence of a new serial column under a free name; gives it, and the default. */
  createSequence(
    session: S,
    ref: TableRef,
    column: string,
    type: string,
  ): Promise<{ name: string; defaultSql: string }>;
  /** Ties sequence `name` to its column once the table exists, where the engine can. */
  ownSequence?(session: S, ref: TableRef, name: string, column: string): Promise<void>;
  /** What a failed statement says, as an answer may show it. */
  message(error: unknown): string;
  /** Records a new table with its columns (ids 1..n); gives the table id. */
  recordTable(session: S, ref: TableRef, columnNames: readonly string[]): Promise<number>;
}

/** A plan's columns as the engine takes them: each one's type, and its checked default. */
export interface CheckedColumns {
  /** Each column's type as the engine writes it, in order. */
  readonly types: readonly string[];
  readonly defaults: ReadonlyMap<PlannedColumn, string>;
}

/** Checks every column's type and default with the engine, or throws 422 naming every problem. */
export async function checkColumns<S>(
  session: S,
  dialect: TableDialect<S>,
  plan: TablePlan,
): Promise<CheckedColumns> {
  const problems: ErrorDetail[] = [];
  const defaults = new Map<PlannedColumn, string>();
  const types: string[] = [];
  for (const column of plan.columns) {
    const type = await dialect.columnType(session, column);
    if (typeof type !== "string") {
      problems.push(type);
      types.push("");
      continue;
    }
    types.push(type);
    if (column.default === null) continue;
    const checked = await dialect.checkDefault(session, column.default, type);
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

/** Finds each foreign key's target and checks it is a single-column key there. */
export function resolvePlannedKeys<S>(
  session: S,
  dialect: Pick<TableDialect<S>, "findTable" | "describeTables">,
  ref: TableRef,
  plan: TablePlan,
  problems: ErrorDetail[],
): Promise<ResolvedForeignKey[]> {
  return resolveForeignKeys(ref, plan, problems, async (reference) => {
    const row = await dialect.findTable(session, reference);
    return row && { row, table: (await dialect.describeTables(session, [row]))[0]! };
  });
}

/** Creates table `ref` of `plan`, its sequences and metadata; `checked` from {@link checkColumns}. */
export async function buildTable<S extends ListSession>(
  session: S,
  dialect: TableDialect<S>,
  ref: TableRef,
  plan: TablePlan,
  checked: CheckedColumns,
): Promise<Table> {
  const problems: ErrorDetail[] = [];
  const references = await resolvePlannedKeys(session, dialect, ref, plan, problems);
  if (problems.length > 0) throw invalidDefinition(ref.name, problems);

  const defaults = new Map(checked.defaults);
  const sequences = new Map<PlannedColumn, string>();
  for (const [i, column] of plan.columns.entries()) {
    if (!column.type.serial) continue;
    const sequence = await dialect.createSequence(session, ref, column.name, checked.types[i]!);
    sequences.set(column, sequence.name);
    defaults.set(column, sequence.defaultSql);
  }

  const sql = dialect.createTableSql(ref, {
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
    throw ApiError.unprocessable(`Cannot create table "${ref.name}": ${dialect.message(error)}`);
  }
  for (const [column, sequence] of sequences) {
    await dialect.ownSequence?.(session, ref, sequence, column.name);
  }

  const columnNames = plan.columns.map((c) => c.name);
  const tableId = await dialect.recordTable(session, ref, columnNames);
  const idOf = (name: string) => columnNames.findIndex((n) => nameKey(n) === nameKey(name)) + 1;
  await recordConstraints(
    session,
    tableId,
    constraintRecords(plan, references, tableId, idOf),
  );
  await recordSequences(
    session,
    tableId,
    ref.schema,
    [...sequences].map(([column, name]) => ({ columnId: idOf(column.name), name })),
  );
  if (plan.template) await recordOrigin(session, tableId, plan.template);
  return (await dialect.describeTables(session, [{ id: tableId, ...ref }]))[0]!;
}
