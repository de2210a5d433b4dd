/**
 * DuckDB's reads of foreign keys in the metadata, by table and column id: into a table, of
 * a table, and with their targets' names of now. (They are written by shared code.)
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import type { Session } from "./database.ts";
import { META } from "./metadata.ts";

/** A foreign key as stored: columns by id. */
export interface ForeignKeyRow {
  readonly tableId: number;
  readonly name: string;
  readonly columnId: number;
  readonly refTableId: number;
  readonly refColumnId: number;
}

/** The columns a {@link ForeignKeyRow} is read from. */
const FOREIGN_KEY_COLUMNS =
  "table_id, constraint_name, column_ids[1] AS column_id, ref_table_id, ref_column_id";

/** The foreign keys of other tables that reference `tableId`. */
export async function foreignKeysInto(
  session: Session,
  tableId: number,
): Promise<ForeignKeyRow[]> {
  const rows = await session.rows(
    `SELECT ${FOREIGN_KEY_COLUMNS} FROM ${META}.constraints
     WHERE kind = 'FOREIGN KEY' AND ref_table_id = $1 AND table_id <> $1
     ORDER BY table_id, position`,
    [tableId],
  );
  return rows.map(toForeignKeyRow);
}

/** A table's own foreign keys, columns and targets by id. */
export async function foreignKeysOf(session: Session, tableId: number): Promise<ForeignKeyRow[]> {
  const rows = await session.rows(
    `SELECT ${FOREIGN_KEY_COLUMNS} FROM ${META}.constraints
     WHERE kind = 'FOREIGN KEY' AND table_id = $1 ORDER BY position`,
    [tableId],
  );
  return rows.map(toForeignKeyRow);
}

/**
 * A table's foreign keys with the names their targets have now, from the metadata alone,
 * so it works while the table itself is dropped for a rebuild.
 */
export async function foreignKeyTargets(
  session: Session,
  tableId: number,
): Promise<{ name: string; target: TableRef; refColumn: string }[]> {
  const rows = await session.rows(
    `SELECT k.constraint_name, r.schema_name, r.table_name, rc.column_name
     FROM ${META}.constraints k
     JOIN ${META}.tables r ON r.table_id = k.ref_table_id
     JOIN ${META}.columns rc ON rc.table_id = k.ref_table_id AND rc.column_id = k.ref_column_id
     WHERE k.table_id = $1 AND k.kind = 'FOREIGN KEY' ORDER BY k.position`,
    [tableId],
  );
  return rows.map((r) => ({
    name: r.constraint_name as string,
    target: { schema: r.schema_name as string, name: r.table_name as string },
    refColumn: r.column_name as string,
  }));
}
export { referencedTableIds } from "../shared/metadata_rows.ts";
function toForeignKeyRow(row: Record<string, unknown>): ForeignKeyRow {
  return {
    tableId: row.table_id as number,
    name: row.constraint_name as string,
    columnId: row.column_id as number,
    refTableId: row.ref_table_id as number,
    refColumnId: row.ref_column_id as number,
  };
}

/**
 * The foreign keys that reference the table `ref` (its stored spelling), the table's own
 * included: each referencing table and the column of `ref` it references.
 */
export async function foreignKeysReferencing(
  session: Session,
  ref: TableRef,
): Promise<{ table: TableRef; refColumn: string }[]> {
  const rows = await session.rows(
    `SELECT t.schema_name, t.table_name, rc.column_name
     FROM ${META}.constraints k
     JOIN ${META}.tables t ON t.table_id = k.table_id
     JOIN ${META}.tables r ON r.table_id = k.ref_table_id
     JOIN ${META}.columns rc ON rc.table_id = k.ref_table_id AND rc.column_id = k.ref_column_id
     WHERE k.kind = 'FOREIGN KEY' AND r.schema_name = $1 AND r.table_name = $2
     ORDER BY t.schema_name, t.table_name, k.position`,
    [ref.schema, ref.name],
  );
  return rows.map((r) => ({
    table: { schema: r.schema_name as string, name: r.table_name as string },
    refColumn: r.column_name as string,
  }));
}
