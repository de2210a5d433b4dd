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
  clear(): void;
}

/**
 * Interrupts `connection` `ms` after now (never when `ms` is undefined). The locked
 * configuration refuses `SET statement_timeout`, so a deadline is the connection's
 * `interrupt()`; an interrupted streaming result ends as if complete, so the caller checks.
 */
export function interruptAfter(connection: DuckDBConnection, ms: number | undefined): Deadline {
  let passed = false;
  const timer = ms === undefined ? undefined : setTimeout(() => {
    passed = true;
    connection.interrupt();
  }, ms);
  const error = () => passed ? ApiError.queryTimeout(ms! / 1000) : undefined;
  return {
    check() {
      const failure = error();
      if (failure) throw failure;
    },
    error,
    clear: () => clearTimeout(timer),
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
