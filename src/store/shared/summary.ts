/**
 * A column's summary from the figures an engine's statement returned for it: the same
 * conversion on both engines, whatever shape their statements give the figures.
 *
 * @module
 */

import type { Column } from "../../catalog/model.ts";
import type { ColumnSummary } from "../store.ts";

/** One column's figures as a statement returned them, before conversion. */
export interface RawFigures {
  /** Values that are not null. */
  readonly count: unknown;
  readonly distinct: unknown;
  /** The least and greatest values rendered as JSON text, or null. */
  readonly min: unknown;
  readonly max: unknown;
  readonly avg: unknown;
  readonly std: unknown;
  readonly q25: unknown;
  readonly q50: unknown;
  readonly q75: unknown;
}

/**
 * The summary of `column` over `rows` rows from its raw `figures`: counts as numbers, min and
 * max parsed from JSON, and any figure JSON cannot carry (NaN, infinite, absent) as null.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { columnSummary } from "./summary.ts";
 *
 * const column = { id: 1, name: "n", type: "INTEGER", default: null, is_nullable: true };
 * const figures = { count: 2n, distinct: 2n, min: "1", max: "3", avg: 2, std: NaN, q25: 1, q50: 2, q75: 3 };
 * const summary = columnSummary(column, 3, figures);
 * assert.equal(summary.nulls, 1);
 * assert.equal(summary.max, 3);
 * assert.equal(summary.std, null);
 * ```
 */
export function columnSummary(column: Column, rows: number, figures: RawFigures): ColumnSummary {
  const count = Number(figures.count);
  return {
    name: column.name,
    type: column.type,
    count,
    nulls: rows - count,
    approx_distinct: Number(figures.distinct),
    min: parsed(figures.min),
    max: parsed(figures.max),
    avg: finite(figures.avg),
    std: finite(figures.std),
    q25: finite(figures.q25),
    q50: finite(figures.q50),
    q75: finite(figures.q75),
  };
}

/** A value rendered as JSON text by the statement, or null. */
function parsed(json: unknown): unknown {
  return typeof json === "string" ? JSON.parse(json) : null;
}

/** A number JSON can carry: not NaN nor infinite, else null. */
function finite(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}
