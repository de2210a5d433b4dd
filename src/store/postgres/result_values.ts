/**
 * PostgreSQL's text of a result's values rendered as the DuckDB store renders them (its
 * values.ts): in JSON, numbers for numeric types (integers beyond ±2^53−1, NaN and the
 * infinities as strings, a numeric's exact digits), `true`/`false`, ISO 8601 for dates and
 * timestamps (with time zone in UTC with `Z`), base64 for bytea, JSON as itself, arrays as
 * JSON arrays of their elements rendered alike; any other type as its text. In CSV the same
 * text, arrays as their JSON, quoted only when needed, NULL an empty unquoted cell.
 *
 * The text must come from a session with `DateStyle` ISO, `TimeZone` UTC and `bytea_output`
 * hex, as result_formats.ts sets them.
 *
 * @module
 */

import { Buffer } from "node:buffer";

/** A result column's type, as rendering needs it. */
export interface ValueType {
  /** The type's oid (the element's for an array is {@link ValueType.element}). */
  readonly oid: number;
  /** An array's element type; undefined for any other type. */
  readonly element?: ValueType;
}

/** Renders one value's text (never NULL) for JSON or a CSV cell. */
export type Render = (text: string) => string;

const BOOL = 16;
const BYTEA = 17;
const INT8 = 20;
const INT2 = 21;
const INT4 = 23;
const OID = 26;
const JSON_OID = 114;
const FLOAT4 = 700;
const FLOAT8 = 701;
const DATE = 1082;
const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;
const NUMERIC = 1700;
const INTERVAL = 1186;
const JSONB = 3802;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A numeric's or a float's text when it is a JSON number, else its JSON string. */
function number(text: string): string {
  return /^-?\d/.test(text) ? text : JSON.stringify(text);
}

/** PostgreSQL's words for a float that is no number, as DuckDB and record pages write them. */
const FLOAT_WORDS: Readonly<Record<string, string>> = {
  NaN: "nan",
  Infinity: "inf",
  "-Infinity": "-inf",
};

/** A float's text as records show it: its digits, or `nan`, `inf`, `-inf`. */
function floatText(text: string): string {
  return FLOAT_WORDS[text] ?? text;
}

function wideInteger(text: string): string {
  const value = BigInt(text);
  return value <= MAX_SAFE && value >= -MAX_SAFE ? text : JSON.stringify(text);
}

/** `YYYY-MM-DD[ HH:MM:SS[.ffffff]][+00][ BC]`, as PostgreSQL writes in ISO style. */
const ISO = /^(\d{4,})-(\d\d-\d\d)(?: (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?)?(?:\+00)?( BC)?$/;

/**
 * A date or timestamp in ISO 8601 as DuckDB renders it: `T` between date and time, six
 * digits of fraction, `Z` when zoned; a year before 1 counted as ISO does (1 BC is `0000`,
 * 2 BC `-0001`). `infinity` and `-infinity` stay as they are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isoTime } from "./result_values.ts";
 *
 * assert.equal(isoTime("2024-01-02 03:04:05.5", false), "2024-01-02T03:04:05.500000");
 * assert.equal(isoTime("2024-01-02 03:04:05+00", true), "2024-01-02T03:04:05.000000Z");
 * assert.equal(isoTime("0002-03-04 BC", false), "-0001-03-04");
 * ```
 */
export function isoTime(text: string, zoned: boolean): string {
  const match = ISO.exec(text);
  if (!match) return text;
  const [, year, monthDay, time, fraction, bc] = match;
  let y = Number(year);
  if (bc) y = 1 - y;
  const yearText = y < 0 ? `-${String(-y).padStart(4, "0")}` : String(y).padStart(4, "0");
  const date = `${yearText}-${monthDay}`;
  if (time === undefined) return date;
  return `${date}T${time}.${(fraction ?? "").padEnd(6, "0")}${zoned ? "Z" : ""}`;
}

function base64(text: string): string {
  return Buffer.from(text.slice(2), "hex").toString("base64");
}

/** The JSON text of a scalar value of type `oid`. */
function scalarJson(oid: number): Render {
  switch (oid) {
    case INT2:
    case INT4:
    case OID:
      return (t) => t;
    case INT8:
      return wideInteger;
    case FLOAT4:
    case FLOAT8:
      return (t) => number(floatText(t));
    case NUMERIC:
      return number;
    case BOOL:
      return (t) => t === "t" ? "true" : "false";
    case DATE:
    case TIMESTAMP:
      return (t) => JSON.stringify(isoTime(t, false));
    case TIMESTAMPTZ:
      return (t) => JSON.stringify(isoTime(t, true));
    case BYTEA:
      return (t) => JSON.stringify(base64(t));
    case INTERVAL:
      return (t) => JSON.stringify(intervalText(t));
    case JSON_OID:
    case JSONB:
      return (t) => t;
    default:
      return (t) => JSON.stringify(t);
  }
}

/**
 * How a value of `type` is written in JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonRender } from "./result_values.ts";
 *
 * assert.equal(jsonRender({ oid: 20 })("9007199254740993"), '"9007199254740993"');
 * assert.equal(jsonRender({ oid: 1007, element: { oid: 23 } })("{1,NULL,3}"), "[1,null,3]");
 * ```
 */
export function jsonRender(type: ValueType): Render {
  if (type.element === undefined) return scalarJson(type.oid);
  const element = jsonRender(type.element);
  return (text) => arrayJson(parseArray(text), element);
}

function arrayJson(value: ArrayValue, element: Render): string {
  return `[${
    value.map((v) =>
      v === null ? "null" : typeof v === "string" ? element(v) : arrayJson(v, element)
    )
      .join(",")
  }]`;
}

/**
 * How a value of `type` is written in a CSV cell, quoted when it holds a quote, a comma or
 * a line break, begins or ends with white space, or is empty (so that it is not NULL).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { csvRender } from "./result_values.ts";
 *
 * assert.equal(csvRender({ oid: 16 })("t"), "true");
 * assert.equal(csvRender({ oid: 25 })('say "hi"'), '"say ""hi"""');
 * assert.equal(csvRender({ oid: 25 })(""), '""');
 * ```
 */
export function csvRender(type: ValueType): Render {
  const text = textRender(type);
  return (value) => csvQuoted(text(value));
}

/** How a value of `type` is written in a CSV cell before quoting (as {@link csvRender}). */
export function textRender(type: ValueType): Render {
  if (type.element !== undefined) return jsonRender(type);
  switch (type.oid) {
    case BOOL:
      return (t) => t === "t" ? "true" : "false";
    case DATE:
    case TIMESTAMP:
      return (t) => isoTime(t, false);
    case TIMESTAMPTZ:
      return (t) => isoTime(t, true);
    case BYTEA:
      return base64;
    case INTERVAL:
      return intervalText;
    case FLOAT4:
    case FLOAT8:
      return floatText;
    default:
      return (t) => t;
  }
}

/**
 * An interval as DuckDB writes it, from PostgreSQL's text of it (IntervalStyle `postgres`,
 * its default): `1 year 2 months -3 days 04:00:00` for `1 year 2 mons -3 days +04:00:00`,
 * each unit singular when it counts one either way, and the time only when it is not zero
 * or is all there is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { intervalText } from "./result_values.ts";
 *
 * assert.equal(intervalText("1 year 2 mons -3 days +04:00:00"), "1 year 2 months -3 days 04:00:00");
 * assert.equal(intervalText("-1 mons"), "-1 month");
 * assert.equal(intervalText("00:00:00"), "00:00:00");
 * assert.equal(intervalText("-1 years -2 mons"), "-1 year -2 months");
 * ```
 */
export function intervalText(text: string): string {
  const parts: string[] = [];
  for (const [unit, pattern] of INTERVAL_UNITS) {
    const count = pattern.exec(text)?.[1];
    if (count !== undefined && Number(count) !== 0) {
      parts.push(`${count} ${unit}${Math.abs(Number(count)) === 1 ? "" : "s"}`);
    }
  }
  const time = /([+-]?)(\d+:\d\d:\d\d(?:\.\d+)?)/.exec(text);
  if (time && (parts.length === 0 || !/^0+:00:00(\.0*)?$/.test(time[2]!))) {
    parts.push(`${time[1] === "-" ? "-" : ""}${time[2]}`);
  }
  return parts.length === 0 ? "00:00:00" : parts.join(" ");
}

/** The units of an interval's text before its time, as PostgreSQL writes them. */
const INTERVAL_UNITS: readonly [string, RegExp][] = [
  ["year", /(-?\d+) years?\b/],
  ["month", /(-?\d+) mons?\b/],
  ["day", /(-?\d+) days?\b/],
];

/**
 * `text` as a CSV cell: quoted, its quotes doubled, when it needs to be.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { csvQuoted } from "./result_values.ts";
 *
 * assert.equal(csvQuoted("a,b"), '"a,b"');
 * assert.equal(csvQuoted("plain"), "plain");
 * ```
 */
export function csvQuoted(text: string): string {
  return /[",\r\n]|^\s|\s$|^$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** An array's elements: text, NULL, or a nested array (a dimension of a multi-dimensional one). */
type ArrayValue = (string | null | ArrayValue)[];

/**
 * The elements of PostgreSQL's text of an array (`{1,NULL,"a b",{2,3}}`), as written:
 * quoted elements unescaped, an unquoted `NULL` as null. A lower bound (`[0:1]={…}`) is
 * dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseArray } from "./result_values.ts";
 *
 * assert.deepEqual(parseArray('{1,NULL,"a \\"b\\"",{2,3}}'), ["1", null, 'a "b"', ["2", "3"]]);
 * ```
 */
export function parseArray(text: string): ArrayValue {
  let i = text.startsWith("[") ? text.indexOf("=") + 1 : 0;
  const parse = (): ArrayValue => {
    const out: ArrayValue = [];
    i++; // {
    if (text[i] === "}") {
      i++;
      return out;
    }
    while (i < text.length) {
      if (text[i] === "{") out.push(parse());
      else if (text[i] === '"') {
        let value = "";
        i++;
        while (text[i] !== '"') {
          if (text[i] === "\\") i++;
          value += text[i];
          i++;
        }
        i++;
        out.push(value);
      } else {
        const start = i;
        while (text[i] !== "," && text[i] !== "}") i++;
        const value = text.slice(start, i).trim();
        out.push(value === "NULL" ? null : value);
      }
      if (text[i] === ",") i++;
      else if (text[i] === "}") {
        i++;
        return out;
      }
    }
    return out;
  };
  return parse();
}
