/**
 * SQL text helpers both engines share: the one way identifiers and the few unbound literals
 * reach SQL, and the default a serial column shows. DuckDB and PostgreSQL follow the SQL
 * standard here alike — an identifier in double quotes keeps its spelling and case, a
 * literal in single quotes, the quote inside doubled — so one function serves both.
 *
 * @module
 */

/**
 * Quotes an identifier: wrapped in double quotes, inner quotes doubled, so its spelling and
 * case are kept. Every schema, table, column and sequence name goes through here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { quoteIdent } from "./sql.ts";
 *
 * assert.equal(quoteIdent('my "Table"'), '"my ""Table"""');
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
 * assert.equal(qualified("public", "Users"), '"public"."Users"');
 * ```
 */
export function qualified(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * A SQL string literal, for the few places an engine takes no bound parameter (DDL, such as
 * a sequence's name inside a column default).
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
 * The default of a column drawing from a sequence, as the service shows it on every engine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sequenceDefault } from "./sql.ts";
 *
 * assert.equal(sequenceDefault({ schema: "public", name: "t_id_seq" }), "nextval('public.t_id_seq')");
 * ```
 */
export function sequenceDefault(
  sequence: { readonly schema: string; readonly name: string },
): string {
  return `nextval(${quoteLiteral(`${sequence.schema}.${sequence.name}`)})`;
}

/**
 * Whether `column` is a serial one: its default, as {@link sequenceDefault} shows it, draws
 * from its sequence, so each row takes a value of its own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { drawsFromSequence } from "./sql.ts";
 *
 * assert.equal(drawsFromSequence({ default: "nextval('public.t_id_seq')" }), true);
 * assert.equal(drawsFromSequence({ default: "'x'" }), false);
 * ```
 */
export function drawsFromSequence(column: { readonly default: string | null }): boolean {
  return column.default !== null && /^nextval\('([^']|'')*'\)$/.test(column.default);
}
