/**
 * The row checks of a table update that read the same on both engines: a new NOT NULL
 * column without a default cannot be added to a table that has rows; failing rows are named
 * by their position in record order, their column and, when there is one, their value.
 *
 * @module
 */

import type { ColumnChange } from "./column_change.ts";
import { ApiError, type ErrorDetail } from "../../errors.ts";

/**
 * 422 when a new NOT NULL column without a default (and not serial) would meet existing
 * rows; `countRows` counts the table's rows, and runs only when there is such a column.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { refuseRequiredColumns } from "./required_columns.ts";
 *
 * await refuseRequiredColumns("t", [], () => Promise.resolve(3));
 * assert.ok(true);
 * ```
 */
export async function refuseRequiredColumns(
  tableName: string,
  columns: readonly ColumnChange[],
  countRows: () => Promise<number | bigint | string>,
): Promise<void> {
  const required = columns.filter((c) =>
    !c.source && c.notNull && c.defaultSql === null && !c.planned.type.serial
  );
  if (required.length === 0) return;
  const n = await countRows();
  if (Number(n) === 0) return;
  throw ApiError.invalidData(
    `Cannot update table "${tableName}": new column "${
      required[0]!.planned.name
    }" is NOT NULL without a default, and the table has ${n} rows`,
    required.map((c) => ({
      column: c.planned.name,
      message: `New column "${c.planned.name}" is NOT NULL without a default`,
    })),
  );
}

/** One failing row as a check finds it; `why` ends the sentence that tells it. */
export interface RowFailure {
  readonly row: number;
  readonly column: string;
  readonly value: string | null;
  readonly why: string;
}

/**
 * Failures as error details.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failureDetails } from "./required_columns.ts";
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
