/**
 * Errors as the PostgreSQL protocol carries them: a SQLSTATE and a message. The service's own
 * errors (ApiError, as `POST /query` answers them) are given the SQLSTATE PostgreSQL would
 * give the same refusal, by their status and words.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/** An error with its SQLSTATE, to send as an `ErrorResponse`. */
export class WireError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly severity: "ERROR" | "FATAL" = "ERROR",
  ) {
    super(message);
    this.name = "WireError";
  }
}

/** 400 messages of the guards and the engines, by the SQLSTATE they mean. */
const BAD_REQUEST: readonly [RegExp, string][] = [
  [/not valid SQL|syntax error|Parser Error|could not be checked/i, "42601"],
  [
    /Table with name|table .* does not exist|relation .* does not exist|Catalog Error: Table|which is not a table/i,
    "42P01",
  ],
  [/column .* does not exist|Referenced column|not found in FROM clause/i, "42703"],
  [/which is not allowed|may not read|creates a table|locks rows/i, "42501"],
  [/function .* does not exist|No function matches|Scalar Function with name/i, "42883"],
  [/Only a single read-only query/i, "25006"],
  [/which a read-only query may not|holds \d+ statements/i, "0A000"],
  [/takes \d+ parameters?, but|Expected \d+ parameters/i, "08P01"],
  [/parameter/i, "42P02"],
  [/Conversion Error|invalid input syntax|Could not convert/i, "22P02"],
  [/division by zero|Divide by zero/i, "22012"],
  [/out of range|Overflow/i, "22003"],
];

/**
 * The SQLSTATE and message of `error`, met while `cancelled` (a CancelRequest came) or not.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ApiError } from "../errors.ts";
 * import { asWireError } from "./errors.ts";
 *
 * assert.equal(asWireError(ApiError.forbidden('The query may not read schema "hr"')).code, "42501");
 * assert.equal(asWireError(ApiError.queryTimeout(30)).code, "57014");
 * ```
 */
export function asWireError(error: unknown, cancelled = false): WireError {
  if (error instanceof WireError) return error;
  if (cancelled) return new WireError("57014", "canceling statement due to user request");
  if (error instanceof ApiError) {
    const message = error.message.replace(/^The query failed: /, "");
    switch (error.status) {
      case 400: {
        const code = BAD_REQUEST.find(([pattern]) => pattern.test(error.message))?.[1];
        return new WireError(code ?? "42601", message);
      }
      case 403:
        return new WireError("42501", message);
      case 404:
        return new WireError("42P01", message);
      case 408:
        return new WireError("57014", "canceling statement due to statement timeout");
      case 413:
        return new WireError("54000", message);
      case 503:
        return new WireError(/memory/i.test(message) ? "53200" : "57P03", message);
      default:
        return new WireError("XX000", message);
    }
  }
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return new WireError(code, message);
  if (/out of memory/i.test(message)) return new WireError("53200", message);
  if (/Interrupt/i.test(message)) return new WireError("57014", "canceling statement");
  return new WireError("XX000", message);
}
