/**
 * A deadline on a DuckDB connection: its `interrupt()` once the time has passed.
 *
 * @module
 */

import type { DuckDBConnection } from "@duckdb/node-api";
import { ApiError } from "../../errors.ts";

/** A connection's deadline: whether it passed, and the error saying so. */
export interface Deadline {
  /** Throws {@link ApiError.queryTimeout} once the deadline has passed. */
  check(): void;
  /** The timeout's error once the deadline has passed, else undefined. */
  error(): ApiError | undefined;
  /** Stops the clock: nothing is interrupted until {@link Deadline.restart}. */
  clear(): void;
  /** Gives the connection `ms` again from now, unless the deadline has already passed. */
  restart(): void;
}

/**
 * The memory bound on clients' reads: DuckDB's memory limit does not cover the strings and
 * lists a query builds, nor some operators' state, so the process's resident memory is
 * sampled while reads are under way, and every read is interrupted once it is more than
 * `bytes` above where it was when the earliest of them began (503). Set by the database as it
 * opens; off until then.
 */
let memoryBound: number | undefined;

/** Reads watched: each one's resident memory when it began, and what to do past the bound. */
const watched = new Map<object, { baseline: number; exceed: () => void }>();
let sampler: ReturnType<typeof setInterval> | undefined;

/** How often the resident memory is sampled while reads are under way. */
const SAMPLE_MS = 20;

/** Sets the memory bound of {@link interruptAfter}'s reads: `bytes` above their start. */
export function boundMemory(bytes: number | undefined): void {
  memoryBound = bytes;
}

/** The resident memory last read, and when (`performance.now()`). */
let lastRead = { rss: 0, at: -Infinity };

/**
 * The process's resident memory, read at most once a sample's interval: a read costs 15 µs
 * in a small process and about 80 in the service, more than a short read's own work.
 */
function residentMemory(fresh = false): number {
  const now = performance.now();
  if (fresh || now - lastRead.at >= SAMPLE_MS) lastRead = { rss: Deno.memoryUsage().rss, at: now };
  return lastRead.rss;
}

function watch(key: object, exceed: () => void): () => void {
  if (memoryBound === undefined) return () => {};
  watched.set(key, { baseline: residentMemory(), exceed });
  // It stops at its first tick with no read to watch, not at each read's end: reads one
  // after another keep one interval.
  sampler ??= setInterval(sample, SAMPLE_MS);
  return () => watched.delete(key);
}

function sample(): void {
  if (memoryBound === undefined || watched.size === 0) {
    clearInterval(sampler);
    sampler = undefined;
    return;
  }
  const rss = residentMemory(true);
  let baseline = Infinity;
  for (const read of watched.values()) baseline = Math.min(baseline, read.baseline);
  if (rss - baseline <= memoryBound) return;
  for (const read of [...watched.values()]) read.exceed();
}

/** The 503 of a read stopped at the memory bound. */
function outOfMemory(): ApiError {
  return ApiError.unavailable(
    "The query needed more memory than the service allows (DUCKDB_MEMORY_LIMIT and a margin " +
      "above it) and was stopped; nothing was changed",
    1,
  );
}

/**
 * Interrupts `connection` `ms` after now (never when `ms` is undefined), or once the process's
 * memory passes {@link boundMemory}'s bound while it has a deadline. The locked configuration
 * refuses `SET statement_timeout`, so a deadline is the connection's
 * `interrupt()`; an interrupted streaming result ends as if complete, so the caller checks.
 */
export function interruptAfter(connection: DuckDBConnection, ms: number | undefined): Deadline {
  let passed = false;
  let exceeded = false;
  const start = () =>
    ms === undefined ? undefined : setTimeout(() => {
      passed = true;
      connection.interrupt();
    }, ms);
  let timer = start();
  const key = {};
  const exceed = () => {
    exceeded = true;
    connection.interrupt();
  };
  // Only reads with a deadline are clients': the service's own work is not watched.
  const watching = () => ms === undefined ? () => {} : watch(key, exceed);
  let unwatch = watching();
  const error = () =>
    exceeded ? outOfMemory() : passed ? ApiError.queryTimeout(ms! / 1000) : undefined;
  return {
    check() {
      const failure = error();
      if (failure) throw failure;
    },
    error,
    clear: () => {
      clearTimeout(timer);
      unwatch();
    },
    restart() {
      clearTimeout(timer);
      unwatch();
      if (!passed && !exceeded) {
        timer = start();
        unwatch = watching();
      }
    },
  };
}

/**
 * Runs `work` under {@link interruptAfter}'s deadline on `connection`: a failure caused by
 * the deadline is {@link ApiError.queryTimeout}, any other as it is; the timer goes after.
 */
export async function underDeadline<T>(
  connection: DuckDBConnection,
  ms: number | undefined,
  work: () => Promise<T>,
): Promise<T> {
  const deadline = interruptAfter(connection, ms);
  try {
    return await work();
  } catch (error) {
    throw deadline.error() ?? error;
  } finally {
    deadline.clear();
  }
}
