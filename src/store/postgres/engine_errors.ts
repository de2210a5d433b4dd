/**
 * What PostgreSQL's errors mean for the service, by SQLSTATE: the only place a PostgreSQL
 * error becomes an HTTP status.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";

/** The fields of a PostgreSQL error `npm:pg` gives, as far as the store reads them. */
export interface EngineError {
  readonly message: string;
  /** The SQLSTATE for a server's error; a Node.js code (`ECONNREFUSED`) for a socket's. */
  readonly code?: string;
  readonly detail?: string;
  /** The constraint a violation names. */
  readonly constraint?: string;
  /** The column a not-null violation names. */
  readonly column?: string;
}

/**
 * The SQLSTATEs of a value its column cannot take, a 422 wherever they arise:
 * 23514 check_violation, 22P02 invalid_text_representation, 22003 numeric_value_out_of_range,
 * 22007 invalid_datetime_format, 22008 datetime_field_overflow, 22001 string_data_right_truncation,
 * 22026 string_data_length_mismatch (a bit string of another length than its `bit(n)`), and
 * 22021 character_not_in_repertoire (a NUL character, which no PostgreSQL text holds).
 */
export const VALUE_MISFITS: ReadonlySet<string> = new Set([
  "23514",
  "22P02",
  "22003",
  "22007",
  "22008",
  "22001",
  "22026",
  "22021",
]);

/** Node.js socket failures: the database cannot be reached. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOENT",
]);

/**
 * What `npm:pg` says when a connection dies or cannot be had, without a code; `timeout
 * exceeded when trying to connect` is the pool's, when every connection stayed busy for its
 * whole wait.
 */
const LOST =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end/i;

/**
 * The client's answer for a PostgreSQL error, or undefined when it is none a client caused
 * or could wait out (then it is the service's, a 500). An {@link ApiError} is itself.
 *
 * - 23505 unique_violation, 40001 serialization_failure, 40P01 deadlock_detected,
 *   55P03 lock_not_available: 409.
 * - 23503 foreign_key_violation: 422 for a value no referenced row has (as an insert's on
 *   DuckDB), 409 for a change to a row others reference.
 * - 23502 not_null_violation, 23514 check_violation, 22P02 invalid_text_representation,
 *   22003 numeric_value_out_of_range, 22007/22008 datetime: 422.
 * - 54000 program_limit_exceeded (a key too long for its index, a row too wide): 422.
 * - 42P01 undefined_table, 3F000 invalid_schema_name: 404.
 * - class 08 (connection), 57P01–57P03 (shutdown, cannot connect now), 53300
 *   (too many connections), socket failures and a wait for a free connection of the pool
 *   that timed out: 503 with `Retry-After`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { engineError } from "./engine_errors.ts";
 *
 * const duplicate = Object.assign(new Error('duplicate key value violates unique constraint "t_pkey"'), {
 *   code: "23505",
 * });
 * assert.equal(engineError(duplicate)?.status, 409);
 * assert.equal(engineError(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }))?.status, 503);
 * assert.equal(engineError(new Error("something else")), undefined);
 * ```
 */
export function engineError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (!(error instanceof Error)) return undefined;
  const { code, message } = error as EngineError;
  const said = engineSaid(error as EngineError);
  if (code !== undefined && (code === "23502" || VALUE_MISFITS.has(code))) {
    return ApiError.invalidData(`A value does not fit its column: ${said}`);
  }
  switch (code) {
    case "23505":
      return ApiError.conflict(`A primary or unique key clashes with another row: ${said}`);
    case "23503":
      return /^insert or update/.test(message)
        ? ApiError.invalidData(`A foreign key names a row that does not exist: ${said}`)
        : ApiError.conflict(`Rows are referenced by another table's foreign key: ${said}`);
    case "40001":
    case "40P01":
    case "55P03":
      return ApiError.conflict(
        "Another change to the same tables or rows was under way; nothing was changed, try again",
      );
    case "54000":
      return ApiError.invalidData(
        `A row does not fit PostgreSQL's limits: ${said}; ${programLimit(message)}`,
      );
    case "42P01":
      return ApiError.notFound(`The table does not exist: ${message}`);
    case "3F000":
      return ApiError.notFound(`The schema does not exist: ${message}`);
  }
  if (
    (code !== undefined && /^(08|57P0[123]$|53300$)/.test(code)) ||
    (code !== undefined && SOCKET_CODES.has(code)) || LOST.test(message)
  ) {
    return ApiError.unavailable(
      "The database cannot be reached now; nothing was changed, try again",
      1,
    );
  }
  return undefined;
}

/**
 * PostgreSQL's message with its detail, and what its words for a NUL character mean.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { engineSaid } from "./engine_errors.ts";
 *
 * assert.match(
 *   engineSaid({ message: 'invalid byte sequence for encoding "UTF8": 0x00', code: "22021" }),
 *   /0x00; PostgreSQL text cannot hold the NUL character/,
 * );
 * ```
 */
export function engineSaid({ message, detail, code }: EngineError): string {
  const said = detail ? `${message} (${detail})` : message;
  return code === "22021" && /0x00/.test(message)
    ? `${said}; PostgreSQL text cannot hold the NUL character (\\u0000)`
    : said;
}

/**
 * What a 54000 program_limit_exceeded of a row means: a key's values too long for an entry
 * of its B-tree index, or a row too wide for a page.
 */
export function programLimit(message: string): string {
  return /^index row/.test(message)
    ? "the values of a primary or unique key must fit in one entry of PostgreSQL's B-tree " +
      "index, about 2,700 bytes after compression"
    : "a row must fit in one 8 KB page of PostgreSQL, and fixed-width values such as numbers " +
      "and dates cannot be moved out of it";
}

/** {@link engineError}'s answer, or `error` itself when it has none. */
export function explained(error: unknown): unknown {
  return engineError(error) ?? error;
}
