/**
 * How a retyped column's values convert on PostgreSQL: by the rule rows are loaded by, not
 * by PostgreSQL's casts where those are laxer. A number becomes a boolean only when it is 0
 * or 1 (PostgreSQL's cast takes any integer, `2` as true), element by element in an array;
 * a JSON value becomes a boolean or a zoned time as its text, unquoted, would (as a JSON
 * value in a rows file is read). Text is already converted by the rule: PostgreSQL's cast
 * from text refuses `2` as a boolean and an offset beyond ±15:59.
 *
 * @module
 */

import { numberType } from "./types.ts";

const INTEGER_ARRAYS = new Set(["smallint[]", "integer[]", "bigint[]"]);
const FROM_JSON_TEXT = new Set(["boolean", "timestamp with time zone", "time with time zone"]);

/**
 * A SQL expression giving `value`, of PostgreSQL type `from`, as `to` (both as
 * `format_type()` spells them); a value the loading rule refuses makes it fail with a data
 * exception (SQLSTATE class 22), as a failing cast does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { retypeSql } from "./retype.ts";
 *
 * assert.equal(retypeSql('"c"', "integer", "bigint"), '"c"::bigint');
 * assert.equal(
 *   retypeSql('"c"', "integer", "boolean"),
 *   `CASE WHEN "c" IN (0, 1) THEN "c" <> 0 ELSE ('not 0 or 1: ' || "c"::text)::boolean END`,
 * );
 * ```
 */
export function retypeSql(value: string, from: string, to: string): string {
  if (to === "boolean" && numberType(from)) {
    return `CASE WHEN ${value} IN (0, 1) THEN ${value} <> 0 ` +
      `ELSE ('not 0 or 1: ' || ${value}::text)::boolean END`;
  }
  if (to === "boolean[]" && INTEGER_ARRAYS.has(from)) {
    return `CASE WHEN array_remove(${value}, NULL) <@ ARRAY[0, 1]::${from} ` +
      `THEN ${value}::boolean[] ELSE ('not 0 or 1: ' || ${value}::text)::boolean[] END`;
  }
  if ((from === "json" || from === "jsonb") && FROM_JSON_TEXT.has(to)) {
    return `(${value} #>> '{}')::${to}`;
  }
  return `${value}::${to}`;
}
