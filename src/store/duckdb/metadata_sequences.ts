/**
 * The sequences serial columns draw from: recording, listing and forgetting them in the
 * metadata, and reading their state from DuckDB's catalog.
 *
 * @module
 */

import { listValue } from "@duckdb/node-api";
import type { Session } from "./database.ts";
import { META } from "./metadata.ts";

/** A sequence a serial column draws from. */
export interface SequenceRow {
  readonly columnId: number;
  readonly schema: string;
  readonly name: string;
}

/** The sequences owned by a table's serial columns. */
export async function sequencesOf(session: Session, tableId: number): Promise<SequenceRow[]> {
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
  session: Session,
  tableId: number,
  columnIds: readonly number[],
): Promise<void> {
  if (columnIds.length === 0) return;
  await session.run(
    `DELETE FROM ${META}.sequences WHERE table_id = $1 AND list_contains($2, column_id)`,
    [tableId, listValue([...columnIds])],
  );
}

/** The next value of a sequence when it is next drawn from. */
export async function nextSequenceValue(
  session: Session,
  schema: string,
  name: string,
): Promise<bigint> {
  const rows = await session.rows(
    `SELECT coalesce(last_value + increment_by, start_value) AS next FROM duckdb_sequences()
     WHERE database_name = current_database() AND schema_name = $1 AND sequence_name = $2`,
    [schema, name],
  );
  return BigInt(rows[0]?.next as bigint | number ?? 1);
}

/** Whether a sequence of that name exists in the schema. */
export async function sequenceExists(
  session: Session,
  schema: string,
  name: string,
): Promise<boolean> {
  const rows = await session.rows(
    `SELECT 1 FROM duckdb_sequences()
     WHERE database_name = current_database() AND lower(schema_name) = lower($1)
       AND lower(sequence_name) = lower($2)`,
    [schema, name],
  );
  return rows.length > 0;
}
