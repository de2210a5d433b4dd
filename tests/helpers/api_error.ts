/**
 * Test support: asserting that a call below the HTTP layer fails with the contract's error.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ApiError } from "../../src/errors.ts";

/**
 * Asserts that `promise` rejects with an {@link ApiError} of `status` whose message matches
 * `message` (when given), and answers that error for further checks.
 *
 * @example
 * ```ts ignore
 * const error = await rejectsWith(store.tables.get(ref), 404, /"people"/);
 * ```
 */
export async function rejectsWith(
  promise: Promise<unknown>,
  status: number,
  message?: RegExp,
): Promise<ApiError> {
  let caught: unknown;
  await assert.rejects(promise, (error) => {
    caught = error;
    assert.ok(error instanceof ApiError, String(error));
    assert.equal(error.status, status, error.message);
    if (message) assert.match(error.message, message);
    return true;
  });
  return caught as ApiError;
}
