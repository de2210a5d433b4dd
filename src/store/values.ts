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

const MAX_SAFE = "9007199254740991";
const WIDE_INTEGERS = new Set(["BIGINT", "HUGEINT", "UBIGINT", "UHUGEINT"]);
const FLOATS = new Set(["FLOAT", "DOUBLE"]);

/** The type a column is read as from JSON, and how the read value becomes the column's. */
export function readAs(
  type: string,
): { readonly type: string; readonly expression: (value: string) => string } {
  if (type === "BLOB") return { type: "VARCHAR", expression: (v) => `from_base64(${v})` };
  return { type, expression: (v) => v };
}

/** A SQL expression giving the JSON value of `column` (of DuckDB type `type`). */
export function jsonValue(column: string, type: string): string {
  const c = quoteIdent(column);
  if (WIDE_INTEGERS.has(type)) {
    return `CASE WHEN ${c} BETWEEN -${MAX_SAFE} AND ${MAX_SAFE} THEN to_json(${c}) ELSE to_json(${c}::VARCHAR) END`;
  }
  if (FLOATS.has(type)) {
    // FLOAT goes through its shortest text so 0.1 stays 0.1; NaN and infinities become strings.
    return `CASE WHEN isfinite(${c}) THEN to_json(${c}::VARCHAR::DOUBLE) ELSE to_json(${c}::VARCHAR) END`;
  }
  if (type.startsWith("DECIMAL")) {
    // to_json goes through DOUBLE for narrow decimals; the decimal's own text is exact.
    return `CAST(${c}::VARCHAR AS JSON)`;
  }
  const text = textValue(column, type);
  if (text !== undefined) return `to_json(${text})`;
  if (type === "JSON") return `${c}::JSON`;
  return `to_json(${c})`;
}

/** A SQL expression giving `column` as CSV cell text (before quoting). */
export function csvValue(column: string, type: string): string {
  const c = quoteIdent(column);
  const text = textValue(column, type);
  if (text !== undefined) return text;
  if (
    type.endsWith("]") || type.startsWith("STRUCT") || type.startsWith("MAP") ||
    type.startsWith("UNION")
  ) {
    return `to_json(${c})::VARCHAR`;
  }
  return `${c}::VARCHAR`;
}

/** Text renderings shared by JSON and CSV; undefined when the type needs none. */
function textValue(column: string, type: string): string | undefined {
  const c = quoteIdent(column);
  switch (type) {
    case "TIMESTAMP WITH TIME ZONE":
      return `strftime(${c}, '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case "TIMESTAMP":
    case "TIMESTAMP_S":
    case "TIMESTAMP_MS":
    case "TIMESTAMP_NS":
      return `strftime(${c}::TIMESTAMP, '%Y-%m-%dT%H:%M:%S.%f')`;
    case "BLOB":
      return `to_base64(${c})`;
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
 *   `'{' || '"a":' || coalesce(to_json("a")::VARCHAR, 'null') || '}'`,
 * );
 * ```
 */
export function jsonObject(columns: readonly { name: string; type: string }[]): string {
  if (columns.length === 0) return `'{}'`;
  // Assembled as text: json_object would parse each value again and round exact decimals
  // through DOUBLE.
  const members = columns.map((c, i) =>
    `${quoteLiteral(`${i === 0 ? "" : ","}${JSON.stringify(c.name)}:`)} || coalesce(${
      jsonValue(c.name, c.type)
    }::VARCHAR, 'null')`
  );
  return `'{' || ${members.join(" || ")} || '}'`;
}

/** A SQL expression giving one CSV line per row (without the line break). */
export function csvLine(columns: readonly { name: string; type: string }[]): string {
  if (columns.length === 0) return `''`;
  return columns.map((c) => {
    const v = csvValue(c.name, c.type);
    // Quote only when needed, as PostgreSQL's COPY does; NULL is an empty unquoted cell.
    return `CASE WHEN ${quoteIdent(c.name)} IS NULL THEN '' ` +
      `WHEN regexp_matches(${v}, '[",\\r\\n]|^\\s|\\s$|^$') THEN '"' || replace(${v}, '"', '""') || '"' ` +
      `ELSE ${v} END`;
  }).join(` || ',' || `);
}
