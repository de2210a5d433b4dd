import assert from "node:assert/strict";
import { DuckDBInstance } from "@duckdb/node-api";
import { wireSelect } from "./wire_values.ts";

/**
 * Values as PostgreSQL 15 writes them in text (read from `psql` with `TimeZone` UTC and the
 * default `extra_float_digits`), by the DuckDB type and the literal that makes them.
 */
const POSTGRES_TEXT: readonly [string, string, string][] = [
  ["DOUBLE", "1e15", "1e+15"],
  ["DOUBLE", "1234567890123456.5", "1.2345678901234565e+15"],
  ["DOUBLE", "-1500000000000000", "-1.5e+15"],
  ["DOUBLE", "9999999999999998", "9.999999999999998e+15"],
  ["DOUBLE", "123456789012345", "123456789012345"],
  ["DOUBLE", "1e16", "1e+16"],
  ["DOUBLE", "0.0001", "0.0001"],
  ["DOUBLE", "0.00001", "1e-05"],
  ["DOUBLE", "-0", "-0"],
  ["DOUBLE", "1.5", "1.5"],
  ["DOUBLE", "nan", "NaN"],
  ["DOUBLE", "-infinity", "-Infinity"],
  ["FLOAT", "1e6", "1e+06"],
  ["FLOAT", "1234567", "1.234567e+06"],
  ["FLOAT", "99999999", "1e+08"],
  ["FLOAT", "123456.5", "123456.5"],
  ["FLOAT", "0.00001", "1e-05"],
  ["TIMESTAMP WITH TIME ZONE", "0002-01-01 12:00:00.5+00", "0002-01-01 12:00:00.5+00"],
  ["TIMESTAMP WITH TIME ZONE", "2024-03-01 00:15:30.25+00", "2024-03-01 00:15:30.25+00"],
  ["TIMESTAMP WITH TIME ZONE", "1970-01-01 00:00:00.000001+00", "1970-01-01 00:00:00.000001+00"],
  ["TIMESTAMP WITH TIME ZONE", "294000-01-01 00:00:00+00", "294000-01-01 00:00:00+00"],
  ["TIMESTAMP WITH TIME ZONE", "-infinity", "-infinity"],
  ["TIMESTAMP WITH TIME ZONE", "0044-08-11 02:53:20.5+00 BC", "0044-08-11 02:53:20.5+00 BC"],
  ["TIMESTAMP", "0044-08-11 02:53:20 BC", "0044-08-11 02:53:20 BC"],
  ["TIMESTAMP", "2024-03-01 00:15:30.25", "2024-03-01 00:15:30.25"],
  ["TIMESTAMP", "infinity", "infinity"],
  ["DATE", "0044-08-11 BC", "0044-08-11 BC"],
];

/** `literal` as a value of `type`: DuckDB reads a BC date or time written `(BC)`. */
function duckdbValue(type: string, literal: string): string {
  const bc = /^(\S+) (.*?) ?BC$/.exec(literal);
  if (!bc) return `CAST('${literal}' AS ${type})`;
  const [, date, time] = bc;
  return type === "DATE"
    ? `CAST('${date} (BC)' AS DATE)`
    : `CAST(CAST('${date} (BC)' AS DATE) + CAST('${time!.replace("+00", "")}' AS TIME) AS ${type})`;
}

Deno.test("wireSelect() writes floats and times with time zone as PostgreSQL does", async () => {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    // As the service's connections: every time in UTC (database_open.ts).
    await connection.run("SET TimeZone = 'UTC'");
    for (const [type, literal, expected] of POSTGRES_TEXT) {
      const reader = await connection.runAndReadAll(
        wireSelect(`SELECT ${duckdbValue(type, literal)} AS v`, [{ type }]),
      );
      assert.equal(reader.getRows()[0]![0], expected, `${type} ${literal}`);
    }
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
});
