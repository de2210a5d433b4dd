/**
 * SQL text helpers: quoting (shared with PostgreSQL, in `../shared/sql.ts`) and DuckDB's
 * error messages.
 *
 * @module
 */

export { qualified, quoteIdent, quoteLiteral } from "../shared/sql.ts";

/**
 * The first line of a DuckDB error without its category prefix and without file paths:
 * what the engine objects to, fit for a client.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { engineMessage } from "./sql.ts";
 *
 * const error = new Error('Conversion Error: Could not convert string \'/srv/data/tmp\' to INT32\nLINE 1: SELECT');
 * assert.equal(engineMessage(error), "Could not convert string '…' to INT32");
 * ```
 */
export function engineMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const first = text.split("\n")[0] ?? "";
  return first.replace(/^[A-Za-z ]*Error: /, "")
    .replace(/ in file "[^"]*"/g, "")
    .replace(/(["'])\/[^"']*\1/g, "$1…$1")
    .trim();
}
