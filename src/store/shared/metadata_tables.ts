/**
 * The metadata of tables that both engines write and read alike: their columns' ids and
 * names, the next column id, their rows by id. Lists are bound the engine's way
 * (`ListSession.list`) and read with `unnest($n::type[])`, which both engines take.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import type { TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import {
  constraintRecords,
  type ForeignKeyToRecord,
  recordConstraints,
} from "./constraint_records.ts";
import type { ListSession, TableRow } from "./core.ts";
import { META } from "./metadata_rows.ts";
import type { ReferenceInto } from "./update_constraints.ts";

/** A table's metadata row read by `table_id, schema_name, table_name`. */
export function toTableRow(row: Record<string, unknown>): TableRow {
  return {
    id: row.table_id as number,
    schema: row.schema_name as string,
    name: row.table_name as string,
  };
}

/** Records a table's columns, each with its id. */
export async function recordColumns(
  session: ListSession,
  tableId: number,
  columns: readonly { readonly id: number; readonly name: string }[],
): Promise<void> {
  // An empty list has no element type DuckDB could bind.
  if (columns.length === 0) return;
  await session.run(
    `INSERT INTO ${META}.columns (table_id, column_id, column_name)
     SELECT $1, unnest($2::integer[]), unnest($3::text[])`,
    [tableId, session.list(columns.map((c) => c.id)), session.list(columns.map((c) => c.name))],
  );
}

/**
 * Records a new table with its columns (ids 1..n); gives the table id. `nextId` is the
 * expression of the id where the engine does not draw it itself.
 */
export async function recordTable(
  session: ListSession,
  ref: TableRef,
  columnNames: readonly string[],
  nextId?: string,
): Promise<number> {
  const rows = await session.rows(
    `INSERT INTO ${META}.tables (${nextId ? "table_id, " : ""}schema_name, table_name,
       next_column_id) VALUES (${nextId ? `${nextId}, ` : ""}$1, $2, $3) RETURNING table_id`,
    [ref.schema, ref.name, columnNames.length + 1],
  );
  const id = rows[0]!.table_id as number;
  await recordColumns(session, id, columnNames.map((name, i) => ({ id: i + 1, name })));
  return id;
}

/** The tables of one schema, by name. */
export async function tablesInSchema(session: ListSession, schema: string): Promise<TableRow[]> {
  const rows = await session.rows(
    `SELECT table_id, schema_name, table_name FROM ${META}.tables
     WHERE lower(schema_name) = lower($1) ORDER BY lower(table_name)`,
    [schema],
  );
  return rows.map(toTableRow);
}

/**
 * Tables not among `tableIds` whose foreign keys reference one of them, with the constraints
 * and the columns they reference.
 */
export async function referencingTables(
  session: ListSession,
  tableIds: readonly number[],
): Promise<ReferenceInto[]> {
  // An empty list has no element type DuckDB could bind.
  if (tableIds.length === 0) return [];
  const rows = await session.rows(
    `SELECT t.schema_name, t.table_name, k.constraint_name, k.ref_column_id
     FROM ${META}.constraints k JOIN ${META}.tables t ON t.table_id = k.table_id
     WHERE k.kind = 'FOREIGN KEY' AND k.ref_table_id IN (SELECT unnest($1::integer[]))
       AND k.table_id NOT IN (SELECT unnest($1::integer[]))
     ORDER BY lower(t.schema_name), lower(t.table_name), k.position`,
    [session.list(tableIds)],
  );
  return rows.map((r) => ({
    schema: r.schema_name as string,
    name: r.table_name as string,
    constraint: r.constraint_name as string,
    refColumnId: r.ref_column_id as number,
  }));
}

/** Forgets tables: their rows in every metadata table. */
export async function forgetTables(
  session: ListSession,
  tableIds: readonly number[],
): Promise<void> {
  if (tableIds.length === 0) return;
  for (const table of ["constraints", "sequences", "table_origins", "columns", "tables"]) {
    await session.run(
      `DELETE FROM ${META}.${table} WHERE table_id IN (SELECT unnest($1::integer[]))`,
      [session.list(tableIds)],
    );
  }
}

/**
 * Rewrites a table's metadata after an update: its address, its columns (ids kept, new
 * ones given) and the next column id; its constraints are forgotten, to be recorded anew.
 */
export async function rewriteTable(
  session: ListSession,
  tableId: number,
  ref: TableRef,
  columns: readonly { readonly id: number; readonly name: string }[],
  nextColumnId: number,
): Promise<void> {
  await session.run(
    `UPDATE ${META}.tables SET schema_name = $2, table_name = $3, next_column_id = $4
     WHERE table_id = $1`,
    [tableId, ref.schema, ref.name, nextColumnId],
  );
  await session.run(`DELETE FROM ${META}.columns WHERE table_id = $1`, [tableId]);
  await recordColumns(session, tableId, columns);
  await session.run(`DELETE FROM ${META}.constraints WHERE table_id = $1`, [tableId]);
}

/** The id the next new column of a table gets. */
export async function nextColumnId(session: ListSession, tableId: number): Promise<number> {
  const rows = await session.rows(
    `SELECT next_column_id FROM ${META}.tables WHERE table_id = $1`,
    [tableId],
  );
  return rows[0]!.next_column_id as number;
}

/** The metadata rows of the given table ids that exist, in id order. */
export async function tablesById(
  session: ListSession,
  ids: readonly number[],
): Promise<TableRow[]> {
  if (ids.length === 0) return [];
  const rows = await session.rows(
    `SELECT table_id, schema_name, table_name FROM ${META}.tables
     WHERE table_id IN (SELECT unnest($1::integer[])) ORDER BY table_id`,
    [session.list(ids)],
  );
  return rows.map(toTableRow);
}

/**
 * A page of tables in schema, then name, order (only `filter.schema`, and only the
 * `visibleSchemas` when given), and how many there are in all.
 */
export async function pageOfTables(
  session: ListSession,
  filter: { schema?: string; visibleSchemas?: readonly string[] },
  offset: number,
  limit: number,
): Promise<{ rows: TableRow[]; total: number }> {
  if (filter.visibleSchemas?.length === 0) return { rows: [], total: 0 };
  const where = `($1::text IS NULL OR lower(schema_name) = lower($1))
    AND ($2::text[] IS NULL OR lower(schema_name) IN (SELECT unnest($2::text[])))`;
  const values = [
    filter.schema ?? null,
    filter.visibleSchemas ? session.list(filter.visibleSchemas.map((s) => s.toLowerCase())) : null,
  ];
  const rows = await session.rows(
    `SELECT table_id, schema_name, table_name, count(*) OVER () AS total
     FROM ${META}.tables WHERE ${where}
     ORDER BY lower(schema_name), lower(table_name) LIMIT $3 OFFSET $4`,
    [...values, limit, offset],
  );
  if (rows.length > 0 || offset === 0) {
    return { rows: rows.map(toTableRow), total: Number(rows[0]?.total ?? 0) };
  }
  // A page past the end has no row to carry the count.
  const count = await session.rows(
    `SELECT count(*) AS n FROM ${META}.tables WHERE ${where}`,
    values,
  );
  return { rows: [], total: Number(count[0]!.n) };
}

/** What an applied table update recorded in the metadata needs of its analysis. */
export interface RecordedUpdate {
  readonly row: TableRow;
  readonly plan: TablePlan;
  /** The wanted columns in order, each with the column it continues, if any. */
  readonly columns: readonly {
    readonly planned: { readonly name: string };
    readonly source?: { readonly id: number };
  }[];
  readonly foreignKeys: readonly ForeignKeyToRecord[];
}

/**
 * Records an updated table's address, columns (ids kept, new ones drawn) and constraints,
 * and answers each wanted column's id.
 */
export async function recordUpdatedTable(
  session: ListSession,
  update: RecordedUpdate,
): Promise<number[]> {
  const { row, plan, columns } = update;
  let next = await nextColumnId(session, row.id);
  const ids = columns.map((c) => c.source?.id ?? next++);
  await rewriteTable(
    session,
    row.id,
    plan.ref,
    columns.map((c, i) => ({ id: ids[i]!, name: c.planned.name })),
    next,
  );
  const idOf = (name: string) =>
    ids[columns.findIndex((c) => nameKey(c.planned.name) === nameKey(name))]!;
  await recordConstraints(
    session,
    row.id,
    constraintRecords(plan, update.foreignKeys, row.id, idOf),
  );
  return ids;
}
