/**
 * How the database is doing: whether it takes writes, and the memory PostgreSQL holds by its
 * own count.
 *
 * @module
 */

import type { Database } from "./database.ts";
import { META } from "./metadata.ts";

/** Is the database reachable and writable (not a standby, not read-only)? */
export async function ready(database: Database): Promise<boolean> {
  try {
    // A real write to the metadata, rolled back: proves the database takes writes.
    await database.withSession(async (session) => {
      await session.run("BEGIN");
      try {
        await session.run(`UPDATE ${META}.info SET value = value WHERE key = 'format'`);
      } finally {
        await session.run("ROLLBACK");
      }
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * Bytes PostgreSQL holds in memory, by use, under stable names so a series never vanishes:
 * `shared_buffers`, the shared page cache PostgreSQL allocates at start (its setting), and
 * `backend_contexts`, what the memory contexts of the connection answering hold
 * (`pg_backend_memory_contexts`, which only a superuser or `pg_read_all_stats` may read: 0
 * otherwise). Other connections' memory PostgreSQL 15 does not tell.
 */
export async function memoryByUse(database: Database): Promise<Map<string, number>> {
  return await database.withSession(async (session) => {
    const [shared] = await session.rows(
      "SELECT pg_size_bytes(current_setting('shared_buffers')) AS bytes",
    );
    let contexts = 0;
    try {
      const [row] = await session.rows(
        "SELECT coalesce(sum(total_bytes), 0) AS bytes FROM pg_backend_memory_contexts",
      );
      contexts = Number(row?.bytes ?? 0);
    } catch {
      // Not permitted to this role: the series stays, at zero.
    }
    return new Map([
      ["backend_contexts", contexts],
      ["shared_buffers", Number(shared?.bytes ?? 0)],
    ]);
  });
}
