/**
 * How a retyped column's values convert on PostgreSQL: by the rule rows are loaded by, not
 * by PostgreSQL's casts where those are laxer. A number becomes a boolean only when it is 0
 * or 1 (PostgreSQL's cast takes any integer, `2` as true), element by element in an array;
 * a JSON value becomes a boolean or a zoned time as its text, unquoted, would (as a JSON
 * value in a rows file is read). Text is already converted by the rule: PostgreSQL's cast
 * from text refuses `2` as a boolean and an offset beyond ±15:59. A value a length would cut
 * (`varchar(3)`, `char(2)`, `bit(2)`, and arrays of them) or whose days an interval's time of
 * day would drop fails, where PostgreSQL's explicit cast changes it.
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
  if (/^interval/.test(from) && /^time(\(\d\))? without time zone$/.test(to)) {
    // PostgreSQL's cast keeps the time of day of '1 day 02:00' and of '-01:00'.
    return whenFits(value, `${value}::time::interval = ${value}`, `${value}::${to}`, to);
  }
  const limited = LIMITED.exec(to);
  if (limited) {
    // An explicit cast to a length cuts the value (and pads a bit string) where a load
    // refuses it: the value must come through the cast unchanged. (ALTER TABLE's USING takes
    // no subquery, so an array is compared whole: PostgreSQL's array equality is element by
    // element, nulls equal, and character's ignores trailing spaces.)
    const [, base, , array] = limited as unknown as [string, string, string, string];
    const whole = numberType(from) && base.startsWith("bit")
      ? `${value}::${from === "bigint" ? "bigint::bit(64)" : "integer::bit(32)"}`
      : value;
    const unlimited = `${UNLIMITED[base]}${array}`;
    return whenFits(
      value,
      `${whole}::${unlimited} = ${whole}::${to}::${unlimited}`,
      `${whole}::${to}`,
      to,
    );
  }
  return `${value}::${to}`;
}

/** Each length-limited type without its limit. */
const UNLIMITED: Readonly<Record<string, string>> = {
  "character varying": "character varying",
  character: "bpchar",
  "bit varying": "bit varying",
  bit: "bit varying",
};

/** Types whose modifier is a length, and arrays of them: the type, the length, `[]` or "". */
const LIMITED = /^(character varying|character|bit varying|bit)\((\d+)\)((?:\[\])?)$/;

/**
 * `converted` (of type `to`) where `fits` holds for `value`, null for a null, and otherwise a
 * data exception (22P02, as a failing cast), which the update turns into the rows' 422.
 */
function whenFits(value: string, fits: string, converted: string, to: string): string {
  return `CASE WHEN ${value} IS NULL THEN NULL WHEN ${fits} THEN ${converted} ` +
    `ELSE ('does not fit ${to}: ' || ${value}::text)::integer::text::${to} END`;
}
