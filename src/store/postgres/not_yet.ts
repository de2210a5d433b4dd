/**
 * The operations the PostgreSQL engine does not carry out yet: each answers 501 in the
 * contract's error shape, naming itself. Each moves to a file of its own as it is built.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";

/** The store's operations not yet built on PostgreSQL. */
export type NotYet =
  | "updateTable"
  | "updateRecords"
  | "deleteRecords"
  | "readRecords"
  | "summarizeRecords"
  | "exportRecords"
  | "readQuery"
  | "streamQuery";

/** What each operation is called in a message. */
const WHAT: Record<NotYet, string> = {
  updateTable: "Updating a table's definition",
  updateRecords: "Updating records",
  deleteRecords: "Deleting records",
  readRecords: "Reading records",
  summarizeRecords: "Summarizing records",
  exportRecords: "Exporting records",
  readQuery: "Running a query",
  streamQuery: "Streaming a query",
};

/**
 * A rejection with 501 for an operation not yet available on PostgreSQL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ApiError } from "../../errors.ts";
 * import { notYet } from "./not_yet.ts";
 *
 * await assert.rejects(notYet("readRecords"), (error) =>
 *   error instanceof ApiError && error.status === 501 &&
 *   error.message === "Reading records (readRecords) is not yet available on PostgreSQL");
 * ```
 */
export function notYet(operation: NotYet): Promise<never> {
  return Promise.reject(
    ApiError.notImplemented(
      `${WHAT[operation]} (${operation}) is not yet available on PostgreSQL`,
    ),
  );
}
