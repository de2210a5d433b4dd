/**
 * The bounds a client's query (`POST /api/v1/query`) meets on both engines before it reaches
 * a parser, and the numbers each engine's guard checks on the parse tree. A parser, a binder
 * and a constant folder recurse over the query and do not look at the clock: the deeper the
 * query, the longer they run before a deadline can stop them (DuckDB took 17 s to bind 990
 * nested `abs()` calls, PostgreSQL's parser ran out of stack on `1+1+…+1` with 5,000 terms).
 * So depth is refused up front, never waited out.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { tokenize } from "./sql_tokens.ts";

/** Deepest nesting of brackets in the text, and of expressions in the parse tree. */
export const MAX_EXPRESSION_DEPTH = 64;

/** Deepest nesting of lambdas (`x -> …`) inside one another: binding them grows exponentially. */
export const MAX_LAMBDA_DEPTH = 8;

/** Longest text a query may ask a function to build (`repeat`, `lpad`, `rpad`), in characters. */
export const MAX_BUILT_TEXT = 1_000_000;

/** Most elements a query may ask a function to build (`range`, `list_resize`, `repeat` of a list). */
export const MAX_BUILT_LIST = 100_000;

/** The 400 for a query nested deeper than {@link MAX_EXPRESSION_DEPTH}. */
export function tooDeep(): ApiError {
  return ApiError.badRequest(
    `The query nests expressions more than ${MAX_EXPRESSION_DEPTH} deep, the most allowed`,
  );
}

/**
 * Refuses, before any parser sees it, a query text holding NUL (neither engine's parser takes
 * one: PostgreSQL's protocol ends the text there) or brackets nested deeper than
 * {@link MAX_EXPRESSION_DEPTH}. Brackets inside string literals, quoted identifiers and
 * comments do not count; the scan is one pass over the text.
 *
 * @throws {ApiError} 400 naming the bound.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkQueryText } from "./query_bounds.ts";
 *
 * checkQueryText("SELECT ((1)) AS x, ')))' AS y -- (((");
 * assert.throws(() => checkQueryText("SELECT " + "(".repeat(65) + "1" + ")".repeat(65)), /64/);
 * assert.throws(() => checkQueryText("SELECT 1\u0000; DROP TABLE t"), /NUL/);
 * ```
 */
export function checkQueryText(sql: string): void {
  if (sql.includes("\u0000")) {
    throw ApiError.badRequest("The query holds a NUL character, which SQL text may not");
  }
  let depth = 0;
  for (const { kind, text } of tokenize(sql)) {
    if (kind !== "punct") continue;
    if (text === "(" || text === "[" || text === "{") {
      if (++depth > MAX_EXPRESSION_DEPTH) throw tooDeep();
    } else if ((text === ")" || text === "]" || text === "}") && depth > 0) depth--;
  }
}
