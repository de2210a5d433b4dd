/**
 * The one row check of a table update that reads the same on both engines: a new NOT NULL
 * column without a default cannot be added to a table that has rows.
 *
 * @module
 */

import type { ColumnChange } from "./column_change.ts";
import { ApiError } from "../../errors.ts";

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
