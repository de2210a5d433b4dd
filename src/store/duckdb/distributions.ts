/**
 * DuckDB's side of a summary's histograms and top values (shared/distributions.ts): which of
 * its types are numbers, dates, timestamps or values to count, and their numeric forms.
 *
 * @module
 */

import type { DistributionDialect, ValueKind } from "../shared/distributions.ts";
import { jsonValue } from "./values.ts";

const INTEGER = /^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$/;
const NUMBER = /^(FLOAT|DOUBLE|DECIMAL\(\d+, ?\d+\))$/;
const KINDS: Readonly<Record<string, ValueKind>> = {
  DATE: "date",
  TIMESTAMP: "timestamp",
  TIMESTAMP_S: "timestamp",
  TIMESTAMP_MS: "timestamp",
  TIMESTAMP_NS: "timestamp",
  "TIMESTAMP WITH TIME ZONE": "timestamptz",
  VARCHAR: "category",
  BOOLEAN: "category",
  UUID: "category",
};

/** DuckDB's histograms and top values. */
export const DUCKDB_DISTRIBUTIONS: DistributionDialect = {
  kind(type) {
    if (INTEGER.test(type)) return "integer";
    if (NUMBER.test(type)) return "number";
    if (type.startsWith("ENUM(")) return "category";
    return KINDS[type];
  },
  float: "DOUBLE",
  asNumber(c, kind) {
    switch (kind) {
      case "date":
        return `(${c} - DATE '1970-01-01')::DOUBLE`;
      case "timestamp":
      case "timestamptz":
        return `epoch(${c})::DOUBLE`;
      default:
        return `${c}::DOUBLE`;
    }
  },
  json: jsonValue,
};
