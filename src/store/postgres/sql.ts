/**
 * SQL text helpers for PostgreSQL: quoting, and the default of a sequence-backed column as
 * the service shows it, both shared with DuckDB in `../shared/sql.ts`.
 *
 * @module
 */

export { qualified, quoteIdent, quoteLiteral, sequenceDefault } from "../shared/sql.ts";

/**
 * `text` as an escaped string literal (`E'…'`), which reads the same whatever
 * `standard_conforming_strings` says.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapedLiteral } from "./sql.ts";
 *
 * assert.equal(escapedLiteral("a'b\\c"), "E'a''b\\\\c'");
 * ```
 */
export function escapedLiteral(text: string): string {
  if (text.includes("\u0000")) throw new Error("A literal cannot contain NUL");
  return `E'${text.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}
