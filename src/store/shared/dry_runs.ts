/**
 * Dry runs of changes, the same on both engines: the change runs as it would, in its
 * transaction and under its locks, and once it has done all it would do (rows loaded, table
 * rebuilt) what the caller wants to see of it is read and thrown as a {@link DryRun}, which
 * rolls the transaction back; the engine catches it outside and answers its outcome. Nothing
 * is written, not even a table the change would have created.
 *
 * @module
 */

export { PREVIEW_ROWS } from "../store.ts";

/** Thrown inside a change's transaction to roll it back, carrying what it would have done. */
export class DryRun<T> extends Error {
  constructor(readonly outcome: T) {
    super("A dry run rolls back");
  }
}

/**
 * `work`'s result, or the outcome of the {@link DryRun} it threw (its transaction rolled back).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DryRun, outcomeOf } from "./dry_runs.ts";
 *
 * assert.equal(await outcomeOf(() => Promise.reject(new DryRun(7))), 7);
 * assert.equal(await outcomeOf(() => Promise.resolve(8)), 8);
 * ```
 */
export async function outcomeOf<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DryRun) return error.outcome as T;
    throw error;
  }
}
