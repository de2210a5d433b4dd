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
 * The type a column is read as from JSON, and how the read value becomes the column's: BLOBs,
 * at the top or inside a LIST, STRUCT or MAP, are read as base64 text and decoded.
 */
export function readAs(
  type: string,
): { readonly type: string; readonly expression: (value: string) => string } {
  const parsed = parseType(type);
  if (!holds(parsed, isBlob)) return { type, expression: (v) => v };
  return {
    type: typeName(mapScalars(parsed, (t) => isBlob(t) ? "VARCHAR" : t)),
    expression: (v) => decoded(v, parsed, 0),
  };
}

function isBlob(type: string): boolean {
  return type === "BLOB";
}

/** `value`, read with its BLOBs as base64 text, as `type`: its BLOBs decoded. */
function decoded(value: string, type: NestedType, depth: number): string {
  if (!holds(type, isBlob)) return value;
  const x = `x${depth}`;
  switch (type.kind) {
    case "scalar":
      return `from_base64(${value})`;
    case "list":
      return `list_transform(${value}, lambda ${x}: ${decoded(x, type.element, depth + 1)})`;
    case "struct":
      return `CASE WHEN ${value} IS NULL THEN NULL ELSE struct_pack(${
        type.fields.map((f) =>
          `${quoteIdent(f.name)} := ${
            decoded(`struct_extract(${value}, ${quoteLiteral(f.name)})`, f.type, depth)
          }`
        ).join(", ")
      }) END`;
    case "map":
      return `CASE WHEN ${value} IS NULL THEN NULL ELSE map_from_entries(list_transform(map_entries(${value}), lambda ${x}: {'key': ${
        decoded(`${x}.key`, type.key, depth + 1)
      }, 'value': ${decoded(`${x}.value`, type.value, depth + 1)}})) END`;
  }
}

/**
 * A SQL expression giving the JSON value of `column` (of DuckDB type `type`) as text. Values
 * inside LISTs, STRUCTs and MAPs travel as they would at the top: wide integers as strings,
 * times in ISO 8601, BLOBs in base64.
 */
export function jsonValue(column: string, type: string): string {
  return jsonText(quoteIdent(column), parseType(type), 0);
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
    return `CAST(${value}::VARCHAR AS JSON)`;
  }
  const text = textValue(value, type);
  if (text !== undefined) return `to_json(${text})`;
  if (type === "JSON") return `${value}::JSON`;
  return `to_json(${value})`;
}

/** A SQL expression giving `column` as CSV cell text (before quoting). */
export function csvValue(column: string, type: string): string {
  const c = quoteIdent(column);
  const nested = parseType(type);
  if (nested.kind !== "scalar") return jsonText(c, nested, 0);
  const text = textValue(c, type);
  if (text !== undefined) return text;
  if (type.startsWith("UNION")) return `to_json(${c})::VARCHAR`;
  return `${c}::VARCHAR`;
}

/** Text renderings of `value` shared by JSON and CSV; undefined when the type needs none. */
function textValue(value: string, type: string): string | undefined {
  switch (type) {
    case "TIMESTAMP WITH TIME ZONE":
      return `strftime(${value}, '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case "TIMESTAMP":
    case "TIMESTAMP_S":
    case "TIMESTAMP_MS":
    case "TIMESTAMP_NS":
      return `strftime(${value}::TIMESTAMP, '%Y-%m-%dT%H:%M:%S.%f')`;
    case "BLOB":
      return `to_base64(${value})`;
    default:
      return undefined;
  }
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
export function jsonObject(columns: readonly { name: string; type: string }[]): string {
  if (columns.length === 0) return `'{}'`;
  // Assembled as text: json_object would parse each value again and round exact decimals
  // through DOUBLE. One concat, not a chain of ||, which DuckDB parses one level deeper per
  // operand and refuses past 1,000 levels (500 columns).
  const members = columns.map((c, i) =>
    `${quoteLiteral(`${i === 0 ? "" : ","}${JSON.stringify(c.name)}:`)}, coalesce(${
      jsonValue(c.name, c.type)
    }, 'null')`
  );
  return `concat('{', ${members.join(", ")}, '}')`;
}

/** A SQL expression giving one CSV line per row (without the line break). */
export function csvLine(columns: readonly { name: string; type: string }[]): string {
  if (columns.length === 0) return `''`;
  // One concat_ws for the reason jsonObject uses concat.
  return `concat_ws(',', ${
    columns.map((c) => {
      const v = csvValue(c.name, c.type);
      // Quote only when needed, as PostgreSQL's COPY does; NULL is an empty unquoted cell.
      return `CASE WHEN ${quoteIdent(c.name)} IS NULL THEN '' ` +
        `WHEN regexp_matches(${v}, '[",\\r\\n]|^\\s|\\s$|^$') THEN '"' || replace(${v}, '"', '""') || '"' ` +
        `ELSE ${v} END`;
    }).join(", ")
  })`;
}
