/**
 * DuckDB's result columns as the PostgreSQL wire protocol describes them, and each value as
 * PostgreSQL's own text of it, rendered in SQL so DuckDB does it vectorised: `t`/`f` for
 * booleans, `Infinity` and `NaN`, `\x…` hex for BLOB, `{…}` arrays, `mons` in intervals, `BC`
 * dates. HUGEINT and the unsigned 64-bit integers are `numeric`, ENUM is `text`, a STRUCT, MAP,
 * UNION or a list of lists is `json`.
 *
 * @module
 */

import type { DuckDBPreparedStatement } from "@duckdb/node-api";
import type { WireColumn } from "../store.ts";
import { numericTypmod, WIRE_TYPES, wireOid } from "../shared/wire_types.ts";
import { parseType } from "./types.ts";
import { decimalText, jsonValue } from "./values.ts";
import { quoteLiteral } from "./sql.ts";

/** PostgreSQL's type for a DuckDB scalar type, and how its value becomes PostgreSQL's text. */
interface ScalarWire {
  readonly oid: number;
  readonly typmod: number;
  /** A SQL expression of the text of `v`, NULL for NULL. */
  readonly text: (v: string) => string;
  /** Whether an array element of it is written without quotes. */
  readonly bare: boolean;
}

const plain = (v: string) => `CAST(${v} AS VARCHAR)`;

const SIMPLE: Readonly<Record<string, readonly [string, (v: string) => string, boolean]>> = {
  BOOLEAN: ["bool", (v) => `CASE ${v} WHEN true THEN 't' WHEN false THEN 'f' END`, true],
  TINYINT: ["int2", plain, true],
  UTINYINT: ["int2", plain, true],
  SMALLINT: ["int2", plain, true],
  USMALLINT: ["int4", plain, true],
  INTEGER: ["int4", plain, true],
  UINTEGER: ["int8", plain, true],
  BIGINT: ["int8", plain, true],
  UBIGINT: ["numeric", plain, true],
  HUGEINT: ["numeric", plain, true],
  UHUGEINT: ["numeric", plain, true],
  VARINT: ["numeric", plain, true],
  BIGNUM: ["numeric", plain, true],
  FLOAT: ["float4", float(6), true],
  DOUBLE: ["float8", float(15), true],
  VARCHAR: ["text", plain, false],
  BLOB: ["bytea", (v) => `'\\x' || lower(hex(${v}))`, false],
  DATE: ["date", bc, false],
  TIME: ["time", plain, false],
  TIME_NS: ["time", (v) => plain(`CAST(${v} AS TIME)`), false],
  "TIME WITH TIME ZONE": ["timetz", plain, false],
  TIMESTAMP: ["timestamp", (v) => timestamp(v), false],
  TIMESTAMP_S: ["timestamp", (v) => timestamp(`CAST(${v} AS TIMESTAMP)`), false],
  TIMESTAMP_MS: ["timestamp", (v) => timestamp(`CAST(${v} AS TIMESTAMP)`), false],
  TIMESTAMP_NS: ["timestamp", (v) => timestamp(`CAST(${v} AS TIMESTAMP)`), false],
  "TIMESTAMP WITH TIME ZONE": ["timestamptz", utc, false],
  INTERVAL: [
    "interval",
    (v) => `regexp_replace(${plain(v)}, ' month(s?)\\b', ' mon\\1', 'g')`,
    false,
  ],
  UUID: ["uuid", plain, false],
  JSON: ["json", plain, false],
  BIT: ["varbit", plain, true],
  NULL: ["text", plain, false],
};

/**
 * A float's text as PostgreSQL writes it: no `.0` on a whole number, `Infinity`, `NaN`, and
 * the same shortest digits with an exponent from 10^`exponentFrom` on (6 for real, 15 for
 * double precision), where DuckDB writes them out further (`1.5e+15` and `1e+06`, not
 * `1500000000000000.0` and `1000000.0`).
 */
function float(exponentFrom: number): (v: string) => string {
  return (v) => {
    const text = `ltrim(${plain(v)}, '-')`;
    const digits = `rtrim(replace(${text}, '.', ''), '0')`;
    const exponent = `strlen(split_part(${text}, '.', 1)) - 1`;
    return `CASE WHEN isnan(${v}) THEN 'NaN' WHEN ${v} = 'inf' THEN 'Infinity' ` +
      `WHEN ${v} = '-inf' THEN '-Infinity' ` +
      `WHEN abs(${v}) >= 1e${exponentFrom} AND NOT contains(${plain(v)}, 'e') THEN ` +
      `CASE WHEN ${v} < 0 THEN '-' ELSE '' END || ${digits}[1] || ` +
      `CASE WHEN strlen(${digits}) > 1 THEN '.' || ${digits}[2:] ELSE '' END || ` +
      `'e+' || lpad(CAST(${exponent} AS VARCHAR), 2, '0') ` +
      `ELSE regexp_replace(${plain(v)}, '\\.0$', '') END`;
  };
}

/** A date's text as PostgreSQL writes it: `0002-01-01 BC`, not `(BC)`. */
function bc(v: string): string {
  return `replace(${plain(v)}, ' (BC)', ' BC')`;
}

/**
 * A timestamp's text as PostgreSQL writes it, `zone` after the time: ` BC` last
 * (`0044-03-15 10:33:41+00 BC`), where DuckDB writes `(BC)` after the date.
 */
function timestamp(v: string, zone = ""): string {
  return `CASE WHEN isinf(${v}) THEN ${plain(v)} ` +
    `WHEN ${v} < TIMESTAMP '0001-01-01' THEN replace(${plain(v)}, ' (BC)', '') || ` +
    `${quoteLiteral(`${zone} BC`)} ELSE ${plain(v)}${zone && ` || ${quoteLiteral(zone)}`} END`;
}

/**
 * A timestamp with time zone's text in UTC, the only zone the listener speaks: its instant as a
 * plain timestamp's text and `+00`, the same text as the cast in a UTC session gives without
 * ICU's calendar (a third of the time), `infinity` as it is.
 */
function utc(v: string): string {
  return `CASE WHEN isinf(${v}) THEN ${plain(v)} ` +
    `ELSE ${timestamp(`make_timestamp(epoch_us(${v}))`, "+00")} END`;
}

/** The wire form of a DuckDB scalar type; text for one PostgreSQL has no like of. */
function scalar(type: string): ScalarWire {
  const simple = SIMPLE[type];
  if (simple) {
    const [name, text, bare] = simple;
    return { oid: wireOid(name), typmod: -1, text, bare };
  }
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(type);
  if (decimal) {
    return {
      oid: wireOid("numeric"),
      typmod: numericTypmod(Number(decimal[1]), Number(decimal[2])),
      text: (v) => decimalText(v, type),
      bare: true,
    };
  }
  if (type.startsWith("UNION")) return { ...json(type), bare: false };
  // ENUM('a', 'b') and anything newer: its text.
  return { oid: wireOid("text"), typmod: -1, text: plain, bare: false };
}

function json(type: string): ScalarWire {
  return { oid: wireOid("json"), typmod: -1, text: (v) => jsonValue(v, type), bare: false };
}

/**
 * An array element's text as PostgreSQL writes it: quoted with `"` and `\` escaped when it is
 * empty, holds a brace, comma, quote, backslash or blank, or reads NULL; NULL unquoted.
 */
function element(text: string, bare: boolean): string {
  if (bare) return `coalesce(${text}, 'NULL')`;
  const quoted = `'"' || replace(replace(${text}, '\\', '\\\\'), '"', '\\"') || '"'`;
  return `coalesce(CASE WHEN ${text} = '' OR upper(${text}) = 'NULL' OR ` +
    `regexp_matches(${text}, '[{}",\\\\\\s]') THEN ${quoted} ELSE ${text} END, 'NULL')`;
}

/** The wire form of a column of DuckDB type `type`. */
function wireType(type: string): ScalarWire {
  const nested = parseType(type);
  if (nested.kind === "list" && nested.element.kind === "scalar") {
    const item = scalar(nested.element.name);
    const array = WIRE_TYPES.get(item.oid)?.array ?? 0;
    if (array !== 0 && item.oid !== wireOid("json")) {
      return {
        oid: array,
        typmod: item.typmod,
        text: (v) =>
          `CASE WHEN ${v} IS NULL THEN NULL ELSE '{' || array_to_string(list_transform(${v}, ` +
          `lambda x: ${element(item.text("x"), item.bare)}), ',') || '}' END`,
        bare: false,
      };
    }
  }
  if (nested.kind !== "scalar") return json(type);
  return scalar(type);
}

/**
 * The columns of a result as the wire describes them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wireColumns } from "./wire_values.ts";
 *
 * const [a, b] = wireColumns([
 *   { name: "a", type: "DECIMAL(10,2)" },
 *   { name: "b", type: "INTEGER[]" },
 * ]);
 * assert.deepEqual([a!.oid, a!.typmod, b!.oid], [1700, 655366, 1007]);
 * ```
 */
export function wireColumns(
  columns: readonly { name: string; type: string }[],
): WireColumn[] {
  return columns.map(({ name, type }) => {
    const wire = wireType(type);
    return { name, type, oid: wire.oid, typmod: wire.typmod };
  });
}

/**
 * The statement giving, for each row of `sql`, the PostgreSQL text of each of `columns`: the
 * query as a subquery whose columns are renamed by position (a result may repeat a name).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wireSelect } from "./wire_values.ts";
 *
 * const sql = wireSelect("SELECT 1 AS a", [{ type: "INTEGER" }]);
 * assert.equal(sql, 'SELECT CAST("c0" AS VARCHAR) FROM (SELECT 1 AS a) AS "result"("c0")');
 * ```
 */
export function wireSelect(sql: string, columns: readonly { type: string }[]): string {
  if (columns.length === 0) return sql;
  const refs = columns.map((_, i) => `"c${i}"`);
  const texts = columns.map((c, i) => wireType(c.type).text(refs[i]!));
  return `SELECT ${texts.join(", ")} FROM (${sql}) AS "result"(${refs.join(", ")})`;
}

/**
 * The statement giving, for each row of `sql`, the whole `DataRow` message of the PostgreSQL
 * protocol with every column in text, as one BLOB: built by DuckDB, vectorised, so the listener
 * sends its bytes as they are rather than decoding and encoding each value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wireMessages } from "./wire_values.ts";
 *
 * assert.match(wireMessages("SELECT 1 AS a", [{ type: "INTEGER" }]), /^SELECT 'D'::BLOB \|\| /);
 * ```
 */
export function wireMessages(sql: string, columns: readonly { type: string }[]): string {
  const refs = columns.map((_, i) => `"c${i}"`);
  const count = `unhex('${columns.length.toString(16).padStart(4, "0")}')`;
  // Each text made once, a level below its two uses (its length and its bytes): DuckDB made
  // it twice when both used the expression, a third of the whole statement's time.
  const parts = columns.map((_, i) =>
    `CASE WHEN "t${i}" IS NULL THEN unhex('ffffffff') ` +
    `ELSE ${int32(`strlen("t${i}")`)} || encode("t${i}") END`
  );
  const texts = columns.length
    ? `(SELECT ${
      columns.map((c, i) => `${wireType(c.type).text(refs[i]!)} AS "t${i}"`).join(", ")
    } FROM (${sql}) AS "result"(${refs.join(", ")})) AS "texts"`
    : `(${sql}) AS "result"`;
  const body = [count, ...parts].join(" || ");
  return `SELECT 'D'::BLOB || ${int32(`4 + octet_length("body")`)} || "body" AS "message" ` +
    `FROM (SELECT ${body} AS "body" FROM ${texts}) AS "messages"`;
}

/**
 * A non-negative integer as the four bytes of a big-endian int32: its 32 bits as a BIT
 * string, which is a BLOB of those bytes. A third faster than `unhex(printf('%08x', n))`,
 * for every value of every row.
 */
function int32(value: string): string {
  return `CAST(CAST(CAST(${value} AS INTEGER) AS BIT) AS BLOB)`;
}

/** The text of each value of a `DataRow` message's bytes (null for NULL). */
export function dataRowValues(message: Uint8Array): (string | null)[] {
  const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
  const count = view.getInt16(5);
  const values: (string | null)[] = [];
  let at = 7;
  for (let i = 0; i < count; i++) {
    const length = view.getInt32(at);
    at += 4;
    if (length < 0) values.push(null);
    else {
      values.push(decoder.decode(message.subarray(at, at + length)));
      at += length;
    }
  }
  return values;
}

const decoder = new TextDecoder();

/**
 * The columns a prepared statement gives, each with its DuckDB type; one typed only by an
 * unbound parameter (`SELECT $1`) as text.
 */
export function preparedColumns(
  prepared: DuckDBPreparedStatement,
): { name: string; type: string }[] {
  const columns: { name: string; type: string }[] = [];
  for (let i = 0; i < prepared.columnCount; i++) {
    let type = "VARCHAR";
    try {
      const t = prepared.columnType(i);
      type = t.alias ?? String(t);
    } catch {
      // Typed only by a parameter.
    }
    columns.push({ name: prepared.columnName(i), type });
  }
  return columns;
}
