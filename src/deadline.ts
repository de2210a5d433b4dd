/**
 * Waiting with a time limit.
 *
 * @module
 */

/**
 * Settles as `promise` does, or rejects with `failure()` once `ms` pass first. The timer is
 * cleared either way; `promise` is left running when late.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { beforeDeadline } from "./deadline.ts";
 *
 * assert.equal(await beforeDeadline(Promise.resolve(1), 50, () => new Error("late")), 1);
 * const never = new Promise<number>(() => {});
 * await assert.rejects(beforeDeadline(never, 5, () => new Error("late")), /late/);
 * ```
 */
export function beforeDeadline<T>(
  promise: Promise<T>,
  ms: number,
  failure: () => Error,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(failure()), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
