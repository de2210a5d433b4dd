/**
 * What both engines decide alike about exporting a table's records.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import { printable } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { ResultFormat } from "../store.ts";

/**
 * Refuses a Parquet export of a table without columns: the text formats write the columns
 * described (none), but a Parquet file needs one, and the engines' only one would be the
 * hidden placeholder that no answer may show.
 *
 * @throws {ApiError} 422 naming the table.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkExportable } from "./exports.ts";
 *
 * const table = { schema: "public", name: "z", columns: [] } as never;
 * checkExportable(table, "csv");
 * assert.throws(() => checkExportable(table, "parquet"), /no columns/);
 * ```
 */
export function checkExportable(table: Table, format: ResultFormat): void {
  if (format === "parquet" && table.columns.length === 0) {
    throw ApiError.unprocessable(
      `Table "${
        printable(table.name)
      }" has no columns, and a Parquet file cannot be written without any`,
    );
  }
}
