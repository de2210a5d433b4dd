/**
 * PostgreSQL's side of a summary's histograms and top values (shared/distributions.ts): which
 * of its types are numbers, dates, timestamps or values to count, and their numeric forms.
 *
 * @module
 */

import type { DistributionDialect, ValueKind } from "../shared/distributions.ts";
import { jsonValue } from "./record_values.ts";

const INTEGER = /^(smallint|integer|bigint)$/;
const NUMBER = /^(real|double precision|numeric(\(\d+,\d+\))?)$/;
const TIMESTAMP = /^timestamp(\(\d\))? without time zone$/;
const TIMESTAMPTZ = /^timestamp(\(\d\))? with time zone$/;
const CATEGORY = /^(text|character varying(\(\d+\))?|character(\(\d+\))?|bpchar|boolean|uuid)$/;

/** PostgreSQL's histograms and top values. */
export const POSTGRES_DISTRIBUTIONS: DistributionDialect = {
  kind(type): ValueKind | undefined {
    if (INTEGER.test(type)) return "integer";
    if (NUMBER.test(type)) return "number";
    if (type === "date") return "date";
    if (TIMESTAMP.test(type)) return "timestamp";
    if (TIMESTAMPTZ.test(type)) return "timestamptz";
    if (CATEGORY.test(type)) return "category";
    return undefined;
  },
  float: "float8",
  asNumber(c, kind) {
    switch (kind) {
      case "date":
        return `(${c} - DATE '1970-01-01')::float8`;
      case "timestamp":
      case "timestamptz":
        return `extract(epoch FROM ${c})::float8`;
      default:
        return `${c}::float8`;
    }
  },
  json: jsonValue,
};
