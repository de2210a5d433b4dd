/**
 * The rows a table update's checks find failing, worded alike on both engines: by their
 * position in record order, their column and, when there is one, their value.
 *
 * @module
 */

import type { ErrorDetail } from "../../errors.ts";

/** One failing row as a check finds it. */
export interface RowFailure {
  readonly row: number;
  readonly column: string;
  readonly value: string | null;
  /** What is wrong with it, as the end of a sentence. */
  readonly why: string;
}

/**
 * Failures as error details.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failureDetails } from "./row_failures.ts";
 *
 * assert.deepEqual(failureDetails([{ row: 2, column: "a", value: null, why: "is null" }]), [
 *   { row: 2, column: "a", message: 'Column "a" of row 2 is null' },
 * ]);
 * ```
 */
export function failureDetails(failures: readonly RowFailure[]): ErrorDetail[] {
  return failures.map(({ row, column, value, why }) => ({
    row,
    column,
    ...(value === null ? {} : { value }),
    message: value === null
      ? `Column "${column}" of row ${row} ${why}`
      : `Value "${value}" of column "${column}" in row ${row} ${why}`,
  }));
}
