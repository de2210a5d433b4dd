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
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      i = closing(sql, i, c, c === "'" && isEscapeString(sql, i));
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end === -1 ? n : end + 1;
    } else if (c === "/" && sql[i + 1] === "*") {
      i = blockCommentEnd(sql, i);
    } else if (c === "$" && isDollarQuoteStart(sql, i)) {
      i = dollarQuoteEnd(sql, i);
    } else {
      if (c === "(" || c === "[" || c === "{") {
        if (++depth > MAX_EXPRESSION_DEPTH) throw tooDeep();
      } else if ((c === ")" || c === "]" || c === "}") && depth > 0) {
        depth--;
      }
      i++;
    }
  }
}

/**
 * The index after the quote closing the one at `start`: a doubled quote stays inside, and so
 * does a quote after a backslash in an `E'…'` string (elsewhere a backslash is a character).
 */
function closing(sql: string, start: number, quote: string, escapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i += escapes && sql[i] === "\\" ? 2 : 1;
  }
  return sql.length;
}

/** Whether the quote at `i` opens an `E'…'` string: an `E` before it that ends no longer word. */
function isEscapeString(sql: string, i: number): boolean {
  return (sql[i - 1] === "E" || sql[i - 1] === "e") && !/[A-Za-z_0-9$]/.test(sql[i - 2] ?? "");
}

/** The index after the block comment at `start`: both engines nest them. */
function blockCommentEnd(sql: string, start: number): number {
  let level = 0;
  let i = start;
  while (i < sql.length) {
    if (sql[i] === "/" && sql[i + 1] === "*") {
      level++;
      i += 2;
    } else if (sql[i] === "*" && sql[i + 1] === "/") {
      level--;
      i += 2;
      if (level === 0) return i;
    } else i++;
  }
  return sql.length;
}

const DOLLAR_TAG = /\$([A-Za-z_][A-Za-z_0-9]*)?\$/y;

function isDollarQuoteStart(sql: string, i: number): boolean {
  if (i > 0 && /[A-Za-z_0-9$]/.test(sql[i - 1]!)) return false;
  DOLLAR_TAG.lastIndex = i;
  return DOLLAR_TAG.test(sql);
}

/** The index after the dollar-quoted string at `start` (`$tag$ … $tag$`). */
function dollarQuoteEnd(sql: string, start: number): number {
  DOLLAR_TAG.lastIndex = start;
  const tag = DOLLAR_TAG.exec(sql)![0];
  const end = sql.indexOf(tag, start + tag.length);
  return end === -1 ? sql.length : end + tag.length;
}
