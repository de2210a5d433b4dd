/**
 * What bounds each read a client can ask PostgreSQL for (a records page, a summary, an export,
 * the filter of a change by filter, a query): a deadline, as `statement_timeout`, and memory,
 * as `work_mem`, both set for the rest of the read's transaction only, so a pooled connection
 * goes back to the pool with the server's own settings.
 *
 * `work_mem` is what one sort or hash may hold before it spills to temporary files; PostgreSQL
 * has no bound on a whole query's memory. {@link WORK_MEM_KB} is 64 MB: PostgreSQL's default
 * (4 MB) sends the sort of a page ordered by a column of a table of a few hundred thousand rows
 * to disk, and 64 MB keeps about a million narrow rows in memory, while ten connections (the
 * pool's default) sorting at once hold 640 MB at most (hashes twice that, at PostgreSQL 15's
 * `hash_mem_multiplier` of 2). A server configured with more for other work does not give it
 * to clients' reads. A value built in one step (`repeat('x', 1e9)`, `string_agg`) is not a sort
 * and is bounded only by PostgreSQL's 1 GB per value and by the deadline.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { StoreContext } from "./context.ts";
import type { Batched, Session } from "./database.ts";
import { escapedLiteral } from "./sql.ts";

/** The deadline of a store opened without one: `QUERY_TIMEOUT_SECONDS`' default. */
export const DEFAULT_READ_TIMEOUT_MS = 30_000;

/** The memory of one sort or hash of a read, in kB (`work_mem`). */
export const WORK_MEM_KB = 64 * 1024;

/** The least `work_mem` PostgreSQL takes, in kB. */
const LEAST_WORK_MEM_KB = 64;

/**
 * The `work_mem` setting for a statement of `sorts` sorts running at once, which share
 * {@link WORK_MEM_KB} (each at least PostgreSQL's least): a summary sorts every column twice
 * in one statement, and 64 MB each over 2,000 columns would be 256 GB.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { workMem } from "./read_bounds.ts";
 *
 * assert.equal(workMem(), "65536kB");
 * assert.equal(workMem(16), "4096kB");
 * assert.equal(workMem(4000), "64kB");
 * ```
 */
export function workMem(sorts = 1): string {
  return `${Math.max(LEAST_WORK_MEM_KB, Math.floor(WORK_MEM_KB / Math.max(1, sorts)))}kB`;
}

/**
 * The statement that bounds the rest of a session's open transaction: each statement cut
 * after `timeoutMs` (`statement_timeout`), each sort and hash to {@link workMem}`(sorts)`.
 * Literals, not parameters: as text without parameters it goes in the same round trip as its
 * transaction's BEGIN (database.ts), or in a batch.
 */
export function readBounds(timeoutMs: number, sorts = 1): string {
  return `SELECT pg_catalog.set_config('statement_timeout', ${
    escapedLiteral(String(Math.max(1, Math.ceil(timeoutMs))))
  }, true), pg_catalog.set_config('work_mem', ${escapedLiteral(workMem(sorts))}, true)`;
}

/** Bounds the rest of `session`'s open transaction by {@link readBounds}. */
export async function boundRead(session: Session, timeoutMs: number, sorts = 1): Promise<void> {
  await session.run(readBounds(timeoutMs, sorts));
}

/** `error` as the client's answer: 408 for a statement `statement_timeout` cancelled. */
export function pastDeadline(error: unknown, timeoutMs: number): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "57014" ? ApiError.queryTimeout(timeoutMs / 1000) : error;
}

/**
 * `database.transaction(work)` bounded by {@link boundRead} to the store's `readTimeoutMs`
 * from its first statement: a wait for a lock counts, as the read does. The bounds and the
 * `opening` statements go with the work's first statement (database.ts).
 *
 * @throws {ApiError} 408 past the deadline; whatever `work` throws.
 */
export async function boundedTransaction<T>(
  { database, readTimeoutMs }: StoreContext,
  work: (session: Session) => Promise<T>,
  opening: readonly Batched[] = [],
): Promise<T> {
  try {
    return await database.transaction(work, [readBounds(readTimeoutMs), ...opening]);
  } catch (error) {
    throw pastDeadline(error, readTimeoutMs);
  }
}
