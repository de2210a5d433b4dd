/**
 * The sequences serial columns draw from, as DuckDB's catalog holds them: whether one
 * exists, and its next value. (Their rows in the metadata are shared/metadata_rows.ts's.)
 *
 * @module
 */

import type { Session } from "./database.ts";

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
