/**
 * How the database is doing: whether it takes writes, whether it can work at all, its
 * open transactions, and the memory DuckDB holds by its own count.
 *
 * @module
 */

import type { Database } from "./database.ts";
import { META } from "./metadata.ts";

/** Is the database open and writable? */
export async function ready(database: Database): Promise<boolean> {
  try {
    // A real write to the file's metadata, rolled back: proves the database takes writes.
    await database.withSession(async (session) => {
      await session.run("BEGIN TRANSACTION");
      await session.run(`UPDATE ${META}.info SET value = value WHERE key = 'format'`);
      await session.run("ROLLBACK");
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * Bytes DuckDB holds in memory at this moment, by every tag of `duckdb_memory()` in lower
 * case, zeros included, so a series never vanishes; `base_table` is its cache of table
 * data, bounded by its memory limit. The names are DuckDB's and may change with it.
 */
export async function memoryByUse(database: Database): Promise<Map<string, number>> {
  const rows = await database.withSession((session) =>
    session.rows(
      "SELECT lower(tag) AS use, memory_usage_bytes AS bytes FROM duckdb_memory() ORDER BY tag",
    )
  );
  return new Map(rows.map((row) => [String(row.use), Number(row.bytes)]));
}
