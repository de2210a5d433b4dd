/**
 * What DuckDB's error messages mean for the service: an instance lost, a commit saved
 * before it was lost, a write refused read-only, memory run out.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";

/**
 * A DuckDB error after which the instance refuses all further work ("database has been
 * invalidated") until it is reopened: a checkpoint that failed, as on a full disk.
 */
export const INVALIDATED =
  /FATAL Error|database has been invalidated|COMMIT succeeded and is durable/;

/**
 * Whether `message` reports a commit DuckDB made durable in its write-ahead log before the
 * automatic checkpoint after it failed: the changes are saved (reopening replays the log),
 * only the instance is lost. Not when the instance was already lost: DuckDB then refuses the
 * commit, quoting the earlier durable commit's words as the original error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { savedBeforeFailure } from "./database.ts";
 *
 * const durable = "Transaction COMMIT succeeded and is durable, but the autocheckpoint failed";
 * assert.ok(savedBeforeFailure(`FATAL Error: ${durable}: No space left on device`));
 * assert.ok(savedBeforeFailure(`Failed to append: FATAL Error: ${durable}`));
 * assert.ok(!savedBeforeFailure(
 *   "FATAL Error: Failed: database has been invalidated because of a previous fatal error. " +
 *     `The database must be restarted prior to being used again.\nOriginal error: "${durable}"`,
 * ));
 * ```
 */
export function savedBeforeFailure(message: string): boolean {
  return /COMMIT succeeded and is durable/.test(message) &&
    !/database has been invalidated/.test(message);
}

/** A write refused by an instance opened read-only. */
export const READ_ONLY = /read-only/i;

/** A primary-key or unique constraint refusing a row (DuckDB 1.5.5's words). */
export const DUPLICATE_KEY = /PRIMARY KEY or UNIQUE constraint|duplicate key/i;

/** A change meeting rows another transaction changed meanwhile, refused at the second. */
export const WRITE_CONFLICT = /Conflict on (update|tuple)|write-write conflict/i;

/**
 * DuckDB's buffer manager short of memory, in its own error or inside another: a commit that
 * cannot allocate the blocks it appends to ("Failed to commit: could not allocate block", as
 * a table of hundreds of columns needs one per column), a checkpoint that cannot pin one.
 */
const OUT_OF_MEMORY = /^Out of Memory Error|could not allocate block of size|failed to pin block/;

/**
 * DuckDB running out of memory as a 503 that says so, not an internal error: nothing failed
 * that a retry, or a higher limit, would not mend. Undefined for any other error.
 */
export function outOfMemory(error: unknown): ApiError | undefined {
  if (!(error instanceof Error && OUT_OF_MEMORY.test(error.message))) return;
  return ApiError.unavailable(
    "The database ran out of memory (DUCKDB_MEMORY_LIMIT); nothing was changed, try again",
    1,
  );
}

/**
 * The kinds of DuckDB exception a client's query can raise by itself: a type that does not
 * fit, a value that does not convert, a construct DuckDB does not support ("Not implemented"
 * is that kind's own name), a division by zero. DuckDB starts each message with its kind,
 * `<kind> Error: …`.
 */
const QUERY_ERROR_KINDS: readonly string[] = [
  "Binder",
  "Catalog",
  "Constraint",
  "Conversion",
  "Dependency",
  "Invalid Input",
  "Invalid type",
  "Not implemented",
  "Out of Range",
  // A parameter where DuckDB takes none: ORDER BY $1, GROUP BY $1, DISTINCT ON ($1).
  "Parameter Not Allowed",
  "Parser",
  "Serialization",
  "Syntax",
  "Type",
];

/** Is `error` one a client's query made by itself, so the query is wrong, not the service? */
export function madeByQuery(error: Error): boolean {
  return QUERY_ERROR_KINDS.some((kind) => error.message.startsWith(`${kind} Error`));
}

/** DuckDB refusing a value the Parquet format has no way to hold (a negative INTERVAL). */
const PARQUET_CANNOT_HOLD = /Parquet files do not support ([^\n]+?)\.?$/m;

/**
 * A value of the client's data that Parquet cannot hold as a 422 naming it and the formats
 * that can, not an internal error: DuckDB reports it as an "IO Error" while writing the file,
 * though nothing about the disk failed. Undefined for any other error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parquetRefusal } from "./engine_errors.ts";
 *
 * const refusal = parquetRefusal(new Error("IO Error: Parquet files do not support negative intervals"));
 * assert.equal(refusal?.status, 422);
 * assert.equal(parquetRefusal(new Error("IO Error: No space left on device")), undefined);
 * ```
 */
export function parquetRefusal(error: unknown): ApiError | undefined {
  const found = error instanceof Error ? PARQUET_CANNOT_HOLD.exec(error.message) : null;
  if (!found) return;
  return ApiError.invalidData(
    `The result cannot be written as Parquet: Parquet files do not support ${found[1]}; ` +
      "ask for csv, ndjson or json, or cast the values to text",
  );
}
