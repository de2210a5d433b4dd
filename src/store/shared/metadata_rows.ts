/**
 * The metadata both engines keep in the same tables and read and write with the same SQL:
 * the internal schema's name, a table's template origin, the tables its foreign keys
 * reference, and the sequences its serial columns draw from. Each engine's session runs the
 * statements.
 *
 * @module
 */

import type { ListSession, SqlSession } from "./core.ts";
import type { TemplateRef } from "../../catalog/model.ts";

/** The internal schema; never listed, never addressable through the API. */
export const META = "_table_service";

/** Records which template version a table was made from. */
export async function recordOrigin(
  session: SqlSession,
  tableId: number,
  template: TemplateRef,
): Promise<void> {
  await session.run(`INSERT INTO ${META}.table_origins VALUES ($1, $2, $3)`, [
    tableId,
    template.name,
    template.version,
  ]);
}

/** The ids of the tables a table's foreign keys reference, itself left out. */
export async function referencedTableIds(
  session: SqlSession,
  tableId: number,
): Promise<number[]> {
  const rows = await session.rows(
    `SELECT DISTINCT ref_table_id FROM ${META}.constraints
     WHERE table_id = $1 AND kind = 'FOREIGN KEY' AND ref_table_id <> $1`,
    [tableId],
  );
  return rows.map((r) => r.ref_table_id as number);
}

/** Records the sequences serial columns draw from, so they go with the table. */
export async function recordSequences(
  session: ListSession,
  tableId: number,
  schema: string,
  sequences: readonly { readonly columnId: number; readonly name: string }[],
): Promise<void> {
  // An empty list has no element type DuckDB could bind.
  if (sequences.length === 0) return;
  await session.run(
    `INSERT INTO ${META}.sequences (table_id, column_id, schema_name, sequence_name)
     SELECT $1, unnest($2::integer[]), $3, unnest($4::text[])`,
    [
      tableId,
      session.list(sequences.map((s) => s.columnId)),
      schema,
      session.list(sequences.map((s) => s.name)),
    ],
  );
}

/** A sequence a serial column draws from. */
export interface SequenceRow {
  readonly columnId: number;
  readonly schema: string;
  readonly name: string;
}

/** The sequences a table's serial columns draw from, by column id. */
export async function sequencesOf(session: SqlSession, tableId: number): Promise<SequenceRow[]> {
  const rows = await session.rows(
    `SELECT column_id, schema_name, sequence_name FROM ${META}.sequences WHERE table_id = $1
     ORDER BY column_id`,
    [tableId],
  );
  return rows.map((r) => ({
    columnId: r.column_id as number,
    schema: r.schema_name as string,
    name: r.sequence_name as string,
  }));
}

/** Forgets the sequences of some columns of a table. */
export async function forgetSequences(
  session: ListSession,
  tableId: number,
  columnIds: readonly number[],
): Promise<void> {
  if (columnIds.length === 0) return;
  await session.run(
    `DELETE FROM ${META}.sequences
     WHERE table_id = $1 AND column_id IN (SELECT unnest($2::integer[]))`,
    [tableId, session.list(columnIds)],
  );
}
