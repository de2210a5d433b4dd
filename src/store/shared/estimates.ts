/**
 * Row counts estimated from an engine's statistics, written once for both engines: a table's
 * rows as its statistics hold them, the rows a filtered read would return as the planner
 * expects them, and the rule that a small estimate is replaced by the exact count (as
 * PostgREST's `count=estimated` does below its threshold). Each engine gives its statistics
 * ({@link RowEstimates}).
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import type { RecordsPage } from "../store.ts";

/** How an engine estimates rows without counting them. */
export interface RowEstimates<S> {
  /** The estimated rows of each table, in the order of `tables` (0 for one not found). */
  tableRows(session: S, tables: readonly TableRef[]): Promise<number[]>;
  /** The planner's estimate of the rows of `select` with `values` bound. */
  plannedRows(session: S, select: string, values: readonly unknown[]): Promise<number>;
}

/**
 * Estimates at or below this are replaced by the exact count: counting so few rows costs
 * little, and small estimates are the least reliable (a table not yet analysed, a rare value).
 */
export const EXACT_COUNT_BELOW = 10_000;

/** What a read estimates from: its table, its filters' SELECT and the count it replaces. */
export interface EstimatedRead {
  readonly table: TableRef;
  /** Whether any filter applies; without one the table's statistics answer. */
  readonly filtered: boolean;
  /** The SELECT of the rows the filters let through, and its bound values. */
  readonly matching: string;
  readonly values: readonly unknown[];
  /** The exact count, run when the estimate is small. */
  count(): Promise<number>;
}

/**
 * The total of a `count=estimated` read: the statistics' estimate (the planner's, with
 * filters), or the exact count when that is at most {@link EXACT_COUNT_BELOW}; `estimated`
 * says which.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { estimatedTotal } from "./estimates.ts";
 *
 * const estimates = {
 *   tableRows: () => Promise.resolve([2_000_000]),
 *   plannedRows: () => Promise.resolve(40),
 * };
 * const read = (filtered: boolean) => ({
 *   table: { schema: "public", name: "t" },
 *   filtered,
 *   matching: "SELECT 1 FROM t WHERE a = $1",
 *   values: ["x"],
 *   count: () => Promise.resolve(37),
 * });
 * assert.deepEqual(await estimatedTotal(estimates, null, read(false)), {
 *   total: 2_000_000,
 *   estimated: true,
 * });
 * assert.deepEqual(await estimatedTotal(estimates, null, read(true)), { total: 37, estimated: false });
 * ```
 */
export async function estimatedTotal<S>(
  estimates: RowEstimates<S>,
  session: S,
  read: EstimatedRead,
): Promise<{ total: number; estimated: boolean }> {
  const estimate = read.filtered
    ? await estimates.plannedRows(session, read.matching, read.values)
    : (await estimates.tableRows(session, [read.table]))[0] ?? 0;
  if (estimate <= EXACT_COUNT_BELOW) return { total: await read.count(), estimated: false };
  return { total: Math.round(estimate), estimated: true };
}

/** `page` with the total of {@link estimatedTotal}. */
export function withEstimate(
  page: RecordsPage,
  counted: { total: number; estimated: boolean },
): RecordsPage {
  return { ...page, total: counted.total, estimated: counted.estimated };
}
