/**
 * Record values as JSON text, rendered by PostgreSQL in the statement that reads them, the
 * way the DuckDB store renders the same values (src/store/duckdb/values.ts): numbers as JSON
 * numbers (integers beyond ±2^53−1 as strings, numerics in their own exact text), booleans,
 * text, dates and times in ISO 8601 (timestamps with six fractional digits, zoned ones in UTC
 * with `Z`), bytea in base64, json and jsonb as themselves, arrays element by element.
 *
 * @module
 */

import { quoteLiteral } from "./sql.ts";

const MAX_SAFE = "9007199254740991";

/** Array element types whose `to_json` is already the contract's rendering. */
const NATIVE =
  /^(smallint|integer|boolean|text|character varying(\(\d+\))?|character(\(\d+\))?|bpchar|numeric(\(\d+,\d+\))?|uuid|json|jsonb|time(\(\d\))? with(out)? time zone|bit.*)$/;

/**
 * A SQL expression giving the JSON text of `value` (an SQL expression of PostgreSQL type
 * `type`, as `format_type()` names it), or NULL when the value is NULL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonValue } from "./record_values.ts";
 *
 * assert.equal(jsonValue('"a"', "integer"), 'to_json("a")::text');
 * assert.equal(jsonValue('"j"', "jsonb"), '"j"::text');
 * ```
 */
export function jsonValue(value: string, type: string): string {
  if (type.endsWith("[]")) {
    const element = type.slice(0, -2);
    if (NATIVE.test(element)) return `to_json(${value})::text`;
    // Each element as it would travel at the top; the ordinality keeps their order.
    return `CASE WHEN ${value} IS NULL THEN NULL ELSE (SELECT '[' || coalesce(string_agg(coalesce(${
      jsonValue(`" e"`, element)
    }, 'null'), ',' ORDER BY " o"), '') || ']' FROM unnest(${value}) WITH ORDINALITY AS " u"(" e", " o")) END`;
  }
  switch (type) {
    case "bigint":
      return `CASE WHEN ${value} BETWEEN -${MAX_SAFE} AND ${MAX_SAFE} THEN ${value}::text ` +
        `ELSE to_json(${value}::text)::text END`;
    case "real":
    case "double precision":
      // PostgreSQL prints the shortest exact text; NaN and infinities as DuckDB writes them.
      return `CASE WHEN ${value} = 'NaN' THEN '"nan"' WHEN ${value} = 'Infinity' THEN '"inf"' ` +
        `WHEN ${value} = '-Infinity' THEN '"-inf"' ELSE ${value}::text END`;
    case "json":
    case "jsonb":
      return `${value}::text`;
    case "bytea":
      // encode() breaks base64 into lines of 76 characters.
      return `to_json(translate(encode(${value}, 'base64'), E'\\n', ''))::text`;
    case "date":
      return `to_json(${isoText(value, "-MM-DD")})::text`;
  }
  if (/^interval/.test(type)) return `to_json(${intervalSql(value)})::text`;
  if (/^timestamp(\(\d\))? without time zone$/.test(type)) {
    return `to_json(${isoText(value, '-MM-DD"T"HH24:MI:SS.US')})::text`;
  }
  if (/^timestamp(\(\d\))? with time zone$/.test(type)) {
    return `to_json(${
      isoText(`(${value} AT TIME ZONE 'UTC')`, '-MM-DD"T"HH24:MI:SS.US"Z"')
    })::text`;
  }
  return `to_json(${value})::text`;
}

/**
 * `value` (an interval) as DuckDB writes it (see result_values.ts `intervalText`): its years,
 * months and days, each singular when it counts one either way, then its time, written when
 * it is not zero or is all there is. The time alone prints without the sign PostgreSQL puts
 * before it after days.
 */
function intervalSql(value: string): string {
  const unit = (field: string, name: string) => {
    const count = `extract(${field} FROM ${value})::bigint`;
    return `CASE WHEN ${count} <> 0 THEN ${count}::text || CASE WHEN abs(${count}) = 1 ` +
      `THEN ' ${name}' ELSE ' ${name}s' END END`;
  };
  // The time's seconds, signed, from its fields rather than its text, which IntervalStyle
  // shapes.
  const seconds = `extract(epoch FROM (${value} - date_trunc('day', ${value})))`;
  const a = `abs(${seconds})`;
  const time = `CASE WHEN ${seconds} < 0 THEN '-' ELSE '' END || ` +
    `CASE WHEN ${a} < 36000 THEN '0' ELSE '' END || floor(${a} / 3600)::text || ':' || ` +
    `lpad(floor(mod(${a}, 3600) / 60)::text, 2, '0') || ':' || ` +
    `rtrim(rtrim(to_char(mod(${a}, 60), 'FM00.000000'), '0'), '.')`;
  const whole = `date_trunc('day', ${value}) = interval '0'`;
  return `CASE WHEN ${value} IS NULL THEN NULL ELSE concat_ws(' ', ${unit("year", "year")}, ${
    unit("month", "month")
  }, ${unit("day", "day")}, CASE WHEN ${seconds} <> 0 OR ${whole} THEN ${time} END) END`;
}

/**
 * `value` (a date or timestamp) as ISO 8601 text: its year, then `rest` (a `to_char`
 * format). ISO 8601 counts 1 BC as year `0000` and 2 BC as `-0001`, as DuckDB's rendering
 * does; infinities are `infinity` and `-infinity`.
 */
function isoText(value: string, rest: string): string {
  const format = quoteLiteral(rest);
  return `CASE WHEN NOT isfinite(${value}) THEN ${value}::text ` +
    `WHEN ${value} >= '0001-01-01' THEN to_char(${value}, ${quoteLiteral(`YYYY${rest}`)}) ` +
    `WHEN extract(year FROM ${value}) = -1 THEN '0000' || to_char(${value}, ${format}) ` +
    `ELSE '-' || lpad((-1 - extract(year FROM ${value})::integer)::text, 4, '0') || to_char(${value}, ${format}) END`;
}

/** A column to render: its name, its type, and the SQL expression that reads it. */
export interface RenderedColumn {
  readonly name: string;
  readonly type: string;
  readonly ref: string;
}

/**
 * A SQL expression giving one JSON object per row, keyed by column name, in the columns'
 * order. Assembled as text from an ARRAY, which has no limit on its elements where
 * PostgreSQL's functions take at most 100 arguments (`json_build_object`, `concat`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonObject } from "./record_values.ts";
 *
 * assert.equal(
 *   jsonObject([{ name: "a", type: "integer", ref: 'page."a"' }]),
 *   `'{' || array_to_string(ARRAY['"a":' || coalesce(to_json(page."a")::text, 'null')], ',') || '}'`,
 * );
 * ```
 */
export function jsonObject(columns: readonly RenderedColumn[]): string {
  if (columns.length === 0) return `'{}'`;
  const members = columns.map((c) =>
    `${quoteLiteral(`${JSON.stringify(c.name)}:`)} || coalesce(${jsonValue(c.ref, c.type)}, 'null')`
  );
  return `'{' || array_to_string(ARRAY[${members.join(", ")}], ',') || '}'`;
}
