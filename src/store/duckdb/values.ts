/**
 * Values between JSON and DuckDB columns, per the contract's table: numbers for numeric
 * columns (integers beyond ±2^53−1 as strings), ISO 8601 for dates and times (UTC with `Z`
 * for TIMESTAMP WITH TIME ZONE), base64 for BLOB, nested JSON for JSON, LIST and STRUCT.
 *
 * Every conversion is a SQL expression, so DuckDB does it vectorised.
 *
 * @module
 */

import { quoteIdent, quoteLiteral } from "./sql.ts";
import { holds, mapScalars, type NestedType, parseType, typeName } from "./types.ts";

const MAX_SAFE = "9007199254740991";
const WIDE_INTEGERS = new Set(["BIGINT", "HUGEINT", "UBIGINT", "UHUGEINT"]);
const FLOATS = new Set(["FLOAT", "DOUBLE"]);

/**
 * A numeric UTC offset beyond ±15:59 (PostgreSQL's limit) after a time: an hour past 15 or
 * a minute or second past 59, in any of the forms DuckDB reads (`+16`, `+1600`, `+16:00`,
 * `+15:59:60`). DuckDB's cast takes them and shifts the time by as much, `+99:00` included.
 */
const OFFSET_BEYOND = String
  .raw`:\d\d(\.\d*)?[+-]((1[6-9]|[2-9]\d)(:?\d\d){0,2}|\d\d:?[6-9]\d(:?\d\d)?|\d\d:?\d\d:?[6-9]\d)\s*$`;
const OFFSET_BEYOND_PATTERN = new RegExp(OFFSET_BEYOND);

/**
 * Whether `text`, a time perhaps after a date, ends in a UTC offset beyond ±15:59: the rule a
 * TIMESTAMP WITH TIME ZONE is read by (see {@link FROM_TEXT}), for code that reads times in
 * JavaScript.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { offsetBeyondLimit } from "./values.ts";
 *
 * assert.equal(offsetBeyondLimit("2024-01-01T00:00:00+16:00"), true);
 * assert.equal(offsetBeyondLimit("2024-01-01T00:00:00-15:59"), false);
 * ```
 */
export function offsetBeyondLimit(text: string): boolean {
  return OFFSET_BEYOND_PATTERN.test(text);
}

/**
 * The one rule by which text becomes a scalar whose cast from text is laxer than the
 * contract, on every path: rows loaded from JSON, CSV or a sheet, and a column retyped from
 * text or JSON. A BOOLEAN takes `true`, `t`, `1` and the like, and refuses `2` like any word the cast
 * does not know. A TIMESTAMP WITH TIME ZONE with an offset beyond ±15:59 is refused: the cast
 * would shift it silently.
 */
const FROM_TEXT: ReadonlyMap<string, (text: string) => string> = new Map([
  ["BOOLEAN", (v: string) => `CAST(${v} AS BOOLEAN)`],
  [
    "TIMESTAMP WITH TIME ZONE",
    // The refused text gets a prefix no timestamp has, so that the cast fails on it.
    (v: string) =>
      `CAST(CASE WHEN regexp_matches(${v}, ${
        quoteLiteral(OFFSET_BEYOND)
      }) THEN 'offset beyond 15:59: ' || ${v} ELSE ${v} END AS TIMESTAMP WITH TIME ZONE)`,
  ],
  ["TIME WITH TIME ZONE", (v: string) => `CAST(${v} AS TIME WITH TIME ZONE)`],
]);

/**
 * Scalars every file is read into as text, then converted by one rule, whichever reader and
 * whichever path: the readers' own conversions are laxer than the cast from text (JSON's
 * reader takes any number as a BOOLEAN, `2` as true). BLOB travels as base64. `read_csv`
 * stores a bad value of a type with a zone as NULL where it fails for every other type
 * (DuckDB 1.5.5), so those are cast after the reader too. `read_json` cannot read a BIT at
 * all ("Cannot read a value of type BIT from a json file"): it comes as text and is cast.
 */
const READ_AS_TEXT: ReadonlyMap<string, (text: string) => string> = new Map([
  ["BLOB", (v: string) => `from_base64(${v})`],
  ["BIT", (v: string) => `CAST(${v} AS BIT)`],
  ...FROM_TEXT,
]);

function readAsText(type: string): boolean {
  return READ_AS_TEXT.has(type);
}

/**
 * The type a column is read as from a rows file (JSON or CSV), and how the read value
 * becomes the column's: the scalars of {@link READ_AS_TEXT}, at the top or inside a LIST,
 * STRUCT or MAP, are read as text and converted by their rule.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readAs } from "./values.ts";
 *
 * assert.equal(readAs("BOOLEAN[]").type, "VARCHAR[]");
 * assert.equal(readAs("INTEGER").expression("k0"), "k0");
 * ```
 */
export function readAs(
  type: string,
): { readonly type: string; readonly expression: (value: string) => string } {
  const parsed = parseType(type);
  if (!holds(parsed, readAsText)) return { type, expression: (v) => v };
  return {
    type: typeName(mapScalars(parsed, (t) => readAsText(t) ? "VARCHAR" : t)),
    expression: (v) => converted(v, parsed, 0, READ_AS_TEXT),
  };
}

/** The numeric types by DuckDB's names, besides DECIMAL(p,s). */
const NUMBERS = new Set([
  "TINYINT",
  "SMALLINT",
  "INTEGER",
  "BIGINT",
  "HUGEINT",
  "UTINYINT",
  "USMALLINT",
  "UINTEGER",
  "UBIGINT",
  "UHUGEINT",
  "FLOAT",
  "DOUBLE",
]);

/**
 * A SQL expression giving `value`, of DuckDB type `from`, as `to`, for a column retyped in
 * place: by {@link FROM_TEXT} when the value is text or JSON, as rows are loaded, and a
 * number becomes a BOOLEAN only when it is 0 or 1, as a JSON number is read. Where that
 * refuses a value the expression fails, so `try()` of it is NULL; otherwise it is DuckDB's
 * cast. LISTs and ARRAYs are converted element by element; STRUCTs and MAPs are cast.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { retypeValue } from "./values.ts";
 *
 * assert.equal(retypeValue("c", "INTEGER", "BIGINT"), "CAST(c AS BIGINT)");
 * ```
 */
export function retypeValue(value: string, from: string, to: string): string {
  return retyped(value, parseType(from), parseType(to), 0);
}

function retyped(value: string, from: NestedType, to: NestedType, depth: number): string {
  const cast = `CAST(${value} AS ${typeName(to)})`;
  if (!holds(to, (t) => FROM_TEXT.has(t))) return cast;
  if (from.kind === "list" && to.kind === "list") {
    const x = `x${depth}`;
    const elements = `list_transform(${value}, lambda ${x}: ${
      retyped(x, from.element, to.element, depth + 1)
    })`;
    return to.size === undefined ? elements : `CAST(${elements} AS ${typeName(to)})`;
  }
  if (from.kind !== "scalar") return cast;
  if (from.name === "VARCHAR" || from.name === "JSON") {
    // A JSON value converts as the same value in a rows file would: its text, unquoted.
    if (from.name === "JSON" && to.kind === "scalar") {
      return converted(`json_extract_string(${value}, '$')`, to, depth, FROM_TEXT);
    }
    const text = typeName(mapScalars(to, (t) => FROM_TEXT.has(t) ? "VARCHAR" : t));
    return converted(`CAST(${value} AS ${text})`, to, depth, FROM_TEXT);
  }
  if (to.kind === "scalar" && to.name === "BOOLEAN" && numeric(from.name)) {
    return `CASE WHEN ${value} IN (0, 1) THEN CAST(${value} AS BOOLEAN) ` +
      `ELSE CAST('not 0 or 1: ' || ${value}::VARCHAR AS BOOLEAN) END`;
  }
  return cast;
}

function numeric(type: string): boolean {
  return NUMBERS.has(type) || type.startsWith("DECIMAL");
}

/** `value`, holding the scalars of `rules` as text, as `type`, each converted by its rule. */
function converted(
  value: string,
  type: NestedType,
  depth: number,
  rules: ReadonlyMap<string, (text: string) => string>,
): string {
  const ruled = (t: string) => rules.has(t);
  if (!holds(type, ruled)) return value;
  const x = `x${depth}`;
  switch (type.kind) {
    case "scalar":
      return rules.get(type.name)!(value);
    case "list":
      return `list_transform(${value}, lambda ${x}: ${
        converted(x, type.element, depth + 1, rules)
      })`;
    case "struct":
      return `CASE WHEN ${value} IS NULL THEN NULL ELSE struct_pack(${
        type.fields.map((f) =>
          `${quoteIdent(f.name)} := ${
            converted(`struct_extract(${value}, ${quoteLiteral(f.name)})`, f.type, depth, rules)
          }`
        ).join(", ")
      }) END`;
    case "map":
      return `CASE WHEN ${value} IS NULL THEN NULL ELSE map_from_entries(list_transform(map_entries(${value}), lambda ${x}: {'key': ${
        converted(`${x}.key`, type.key, depth + 1, rules)
      }, 'value': ${converted(`${x}.value`, type.value, depth + 1, rules)}})) END`;
  }
}

/**
 * A SQL expression giving the JSON value of `value` (a SQL expression of DuckDB type `type`,
 * a quoted column say) as text. Values inside LISTs, STRUCTs and MAPs travel as they would at
 * the top: wide integers as strings, times in ISO 8601, BLOBs in base64.
 */
export function jsonValue(value: string, type: string): string {
  return jsonText(value, parseType(type), 0);
}

/** Scalars whose JSON is not DuckDB's plain `to_json` (see scalarJson). */
function ownJson(type: string): boolean {
  return scalarJson("v", type) !== "to_json(v)";
}

/** The JSON text of `value`, of type `type`; `depth` names the lambdas' variables apart. */
function jsonText(value: string, type: NestedType, depth: number): string {
  // A nested value with nothing of its own inside is one native call, not lambdas.
  if (type.kind !== "scalar" && !holds(type, ownJson)) return `to_json(${value})::VARCHAR`;
  const x = `x${depth}`;
  const element = (v: string, t: NestedType) => `coalesce(${jsonText(v, t, depth + 1)}, 'null')`;
  switch (type.kind) {
    case "scalar":
      return `${scalarJson(value, type.name)}::VARCHAR`;
    case "list":
      return `CASE WHEN ${value} IS NULL THEN NULL ELSE '[' || array_to_string(list_transform(${value}, lambda ${x}: ${
        element(x, type.element)
      }), ',') || ']' END`;
    case "struct":
      // Assembled as text, as a row is (see jsonObject).
      return `CASE WHEN ${value} IS NULL THEN NULL ELSE '{' || ${
        type.fields.map((f, i) =>
          `${quoteLiteral(`${i === 0 ? "" : ","}${JSON.stringify(f.name)}:`)} || ${
            element(`struct_extract(${value}, ${quoteLiteral(f.name)})`, f.type)
          }`
        ).join(" || ")
      } || '}' END`;
    case "map": {
      // A key is a JSON object's name: the text of its value, unquoted when that is a string.
      const key = `to_json(json_extract_string(${jsonText(`${x}.key`, type.key, depth + 1)}, '$'))`;
      return `CASE WHEN ${value} IS NULL THEN NULL ELSE '{' || array_to_string(list_transform(map_entries(${value}), lambda ${x}: ${key}::VARCHAR || ':' || ${
        element(`${x}.value`, type.value)
      }), ',') || '}' END`;
    }
  }
}

/** The JSON value of `value`, of a type that holds no others. */
function scalarJson(value: string, type: string): string {
  if (WIDE_INTEGERS.has(type)) {
    return `CASE WHEN ${value} BETWEEN -${MAX_SAFE} AND ${MAX_SAFE} THEN to_json(${value}) ELSE to_json(${value}::VARCHAR) END`;
  }
  if (FLOATS.has(type)) {
    // FLOAT goes through its shortest text so 0.1 stays 0.1; NaN and infinities become strings.
    return `CASE WHEN isfinite(${value}) THEN to_json(${value}::VARCHAR::DOUBLE) ELSE to_json(${value}::VARCHAR) END`;
  }
  if (type.startsWith("DECIMAL")) {
    // to_json goes through DOUBLE for narrow decimals; the decimal's own text is exact.
    return `CAST(${decimalText(value, type)} AS JSON)`;
  }
  const text = textValue(value, type);
  if (text !== undefined) return `to_json(${text})`;
  if (type === "JSON") return `${value}::JSON`;
  return `to_json(${value})`;
}

/**
 * The text of `value`, a DECIMAL of `type`: DuckDB writes one whose scale is its width
 * (DECIMAL(4,4)) without the 0 before the point (`.5000`, `-.5000`), which is no JSON number.
 */
export function decimalText(value: string, type: string): string {
  const [, width, scale] = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(type) ?? [];
  const text = `${value}::VARCHAR`;
  if (width === undefined || width !== scale) return text;
  return `CASE WHEN starts_with(${text}, '.') THEN '0' || ${text} ` +
    `WHEN starts_with(${text}, '-.') THEN '-0' || substr(${text}, 2) ELSE ${text} END`;
}

/**
 * `value` (a DATE or timestamp) as ISO 8601 text: its year, then `rest` (a strftime format).
 * DuckDB writes a date before year 1 as `0002-01-01 (BC)` and strftime its year as `-1`;
 * ISO 8601 counts 1 BC as year `0000` and 2 BC as `-0001`, as the input side reads them.
 */
function isoText(value: string, rest: string): string {
  return `CASE WHEN ${value} >= '0000-01-01' OR NOT isfinite(${value}) ` +
    `THEN strftime(${value}, '%Y${rest}') ` +
    `ELSE printf('%05d', CAST(strftime(${value}, '%Y') AS INTEGER)) || strftime(${value}, '${rest}') END`;
}

/** A SQL expression giving `c` (a SQL expression of DuckDB type `type`) as CSV cell text. */
function csvValue(c: string, type: string): string {
  const nested = parseType(type);
  if (nested.kind !== "scalar") return jsonText(c, nested, 0);
  const text = textValue(c, type);
  if (text !== undefined) return text;
  if (type.startsWith("UNION")) return `to_json(${c})::VARCHAR`;
  if (type.startsWith("DECIMAL")) return decimalText(c, type);
  return `${c}::VARCHAR`;
}

/** Text renderings of `value` shared by JSON and CSV; undefined when the type needs none. */
function textValue(value: string, type: string): string | undefined {
  switch (type) {
    case "DATE":
      return isoText(value, "-%m-%d");
    case "TIMESTAMP WITH TIME ZONE":
      return isoText(value, "-%m-%dT%H:%M:%S.%fZ");
    case "TIMESTAMP":
    case "TIMESTAMP_S":
    case "TIMESTAMP_MS":
    case "TIMESTAMP_NS":
      return isoText(`${value}::TIMESTAMP`, "-%m-%dT%H:%M:%S.%f");
    case "BLOB":
      return `to_base64(${value})`;
    default:
      return undefined;
  }
}

/**
 * A column to render: its name, its DuckDB type, and how the statement refers to it when not
 * by its quoted name (a query's result may hold two columns of one name).
 */
export interface RenderedColumn {
  readonly name: string;
  readonly type: string;
  readonly ref?: string;
}

/**
 * A SQL expression giving one JSON object per row, keyed by column name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonObject } from "./values.ts";
 *
 * assert.equal(
 *   jsonObject([{ name: "a", type: "INTEGER" }]),
 *   `concat('{', '"a":', coalesce(to_json("a")::VARCHAR, 'null'), '}')`,
 * );
 * ```
 */
export function jsonObject(columns: readonly RenderedColumn[]): string {
  if (columns.length === 0) return `'{}'`;
  return `concat('{', ${memberList(columns, true)}, '}')`;
}

/**
 * A SQL expression giving the members (`"name":value`) of `columns` in a row's JSON object,
 * as {@link jsonObject} writes them; with `opening` false, a comma before the first, as
 * members that follow others.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonMembers } from "./values.ts";
 *
 * assert.equal(
 *   jsonMembers([{ name: "a", type: "INTEGER" }], false),
 *   `concat(',"a":', coalesce(to_json("a")::VARCHAR, 'null'))`,
 * );
 * ```
 */
export function jsonMembers(columns: readonly RenderedColumn[], opening: boolean): string {
  if (columns.length === 0) return `''`;
  return `concat(${memberList(columns, opening)})`;
}

/** The arguments of a concat giving the members of `columns`. */
function memberList(columns: readonly RenderedColumn[], opening: boolean): string {
  // Assembled as text: json_object would parse each value again and round exact decimals
  // through DOUBLE. One concat, not a chain of ||, which DuckDB parses one level deeper per
  // operand and refuses past 1,000 levels (500 columns).
  return columns.map((c, i) =>
    `${quoteLiteral(`${i === 0 && opening ? "" : ","}${JSON.stringify(c.name)}:`)}, coalesce(${
      jsonValue(c.ref ?? quoteIdent(c.name), c.type)
    }, 'null')`
  ).join(", ");
}

/** A SQL expression giving one CSV line per row (without the line break). */
export function csvLine(columns: readonly RenderedColumn[]): string {
  if (columns.length === 0) return `''`;
  // One concat_ws for the reason jsonObject uses concat.
  return `concat_ws(',', ${
    columns.map((c) => {
      const ref = c.ref ?? quoteIdent(c.name);
      const v = csvValue(ref, c.type);
      // Quote only when needed, as PostgreSQL's COPY does; NULL is an empty unquoted cell.
      return `CASE WHEN ${ref} IS NULL THEN '' ` +
        `WHEN regexp_matches(${v}, '[",\\r\\n]|^\\s|\\s$|^$') THEN '"' || replace(${v}, '"', '""') || '"' ` +
        `ELSE ${v} END`;
    }).join(", ")
  })`;
}
