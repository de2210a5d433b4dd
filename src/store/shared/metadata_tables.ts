/**
 * The metadata of tables that both engines write and read alike: their columns' ids and
 * names, the next column id, their rows by id. Lists are bound the engine's way
 * (`ListSession.list`) and read with `unnest($n::type[])`, which both engines take.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import type { ListSession, TableRow } from "./core.ts";
import { META } from "./metadata_rows.ts";

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
