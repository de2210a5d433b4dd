/**
 * Column defaults on PostgreSQL: for now only the plainest expressions, each checked
 * against its column's type by PostgreSQL.
 *
 * PostgreSQL has no way to parse an expression without running it, so instead of a parse
 * tree (as the DuckDB engine reads) the text must match one of a few shapes that can hold
 * nothing else: a number, a string literal, `true`, `false`, `null`, or a clock or
 * randomness function without arguments. Only such text ever reaches SQL.
 *
 * @module
 */

import type { Session } from "./database.ts";

/** A default that failed, with the reason in words. */
export interface DefaultProblem {
  readonly problem: string;
}

const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
/** One string literal: no backslash escapes (`standard_conforming_strings` is on). */
const STRING = /^'(?:[^']|'')*'$/;
const KEYWORDS =
  /^(?:true|false|null|current_timestamp|current_date|current_time|localtimestamp|localtime)$/i;
const CALLS =
  /^(?:now|gen_random_uuid|random|clock_timestamp|statement_timestamp|transaction_timestamp)\(\s*\)$/i;

const TAKEN = "a number, a string literal, true, false, null, now(), current_timestamp, " +
  "current_date, current_time, localtimestamp, localtime, gen_random_uuid(), random(), " +
  "clock_timestamp(), statement_timestamp() or transaction_timestamp()";

/**
 * Why `text` is not a default the engine takes, or undefined when its shape is one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultShapeProblem } from "./defaults.ts";
 *
 * assert.equal(defaultShapeProblem("'it''s'"), undefined);
 * assert.equal(defaultShapeProblem(" now() "), undefined);
 * assert.match(defaultShapeProblem("1); DROP TABLE t; --")!, /is not one PostgreSQL takes yet/);
 * ```
 */
export function defaultShapeProblem(text: string): string | undefined {
  const trimmed = text.trim();
  const fits = [NUMBER, STRING, KEYWORDS, CALLS].some((shape) => shape.test(trimmed));
  // PostgreSQL's text cannot hold NUL.
  if (fits && !trimmed.includes("\u0000")) return undefined;
  return `is not one PostgreSQL takes yet: use ${TAKEN}`;
}

/**
 * Checks a default for a column of type `typeSql` (a PostgreSQL type from types.ts): its
 * shape, then that PostgreSQL turns it into a value of the type. Returns the expression to
 * write in DDL, or the problem. A failed probe aborts a transaction, so this runs outside
 * the one that builds the table.
 */
export async function checkDefault(
  session: Session,
  text: string,
  typeSql: string,
): Promise<string | DefaultProblem> {
  const shape = defaultShapeProblem(text);
  if (shape) return { problem: shape };
  const expression = text.trim();
  try {
    await session.rows(`SELECT CAST((${expression}) AS ${typeSql}) AS probe`);
    return expression;
  } catch (error) {
    const said = error instanceof Error ? error.message : String(error);
    return { problem: `is not a value of type ${typeSql}: ${said}` };
  }
}
