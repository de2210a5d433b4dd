/**
 * What both engines decide alike about exporting a table's records, and how each text format
 * of a streamed result (an export's or a query's) frames its rows: what comes first (CSV's
 * header line, a JSON array's `[`), between rows, after each row, and last.
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

/** What a text format writes around its rows. */
export interface ResultFrame {
  readonly head: string;
  readonly separator: string;
  /** After each row: a line's end, or nothing inside a JSON array. */
  readonly end: string;
  readonly tail: string;
}

/**
 * The frame of `format`; `header` is CSV's header line, without its end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resultFrame } from "./exports.ts";
 *
 * assert.deepEqual(resultFrame("json", "a"), { head: "[", separator: ",", end: "", tail: "]\n" });
 * assert.equal(resultFrame("csv", "a,b").head, "a,b\n");
 * ```
 */
export function resultFrame(format: Exclude<ResultFormat, "parquet">, header: string): ResultFrame {
  switch (format) {
    case "csv":
      return { head: `${header}\n`, separator: "", end: "\n", tail: "" };
    case "ndjson":
      return { head: "", separator: "", end: "\n", tail: "" };
    case "json":
      return { head: "[", separator: ",", end: "", tail: "]\n" };
  }
}
