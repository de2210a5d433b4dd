/**
 * SQL text helpers: the one way identifiers reach SQL.
 *
 * @module
 */

/**
 * Quotes an identifier for DuckDB (and PostgreSQL): wrapped in double quotes, inner quotes
 * doubled. Every schema, table, column and sequence name goes through here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { quoteIdent } from "./sql.ts";
 *
 * assert.equal(quoteIdent('my "table"'), '"my ""table"""');
 * ```
 */
export function quoteIdent(name: string): string {
  if (name.includes("\u0000")) throw new Error("An identifier cannot contain NUL");
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * A schema-qualified, quoted name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { qualified } from "./sql.ts";
 *
 * assert.equal(qualified("public", "users"), '"public"."users"');
 * ```
 */
export function qualified(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * A SQL string literal, for the few places DuckDB accepts no bound parameter (a sequence
 * name inside a column default).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { quoteLiteral } from "./sql.ts";
 *
 * assert.equal(quoteLiteral("it's"), "'it''s'");
 * ```
 */
export function quoteLiteral(text: string): string {
  if (text.includes("\u0000")) throw new Error("A literal cannot contain NUL");
  return `'${text.replaceAll("'", "''")}'`;
}

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
