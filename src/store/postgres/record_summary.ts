/**
 * Figures of a PostgreSQL table's records, per column, over the rows some filters let
 * through: what the DuckDB store's summary reports, in one statement (so one snapshot).
 * PostgreSQL has no HyperLogLog: `approx_distinct` is `count(DISTINCT …)`, exact, and costs
 * a sort per column; quartiles are `percentile_cont`, exact too.
 *
 * @module
 */

import type { Filter } from "../../catalog/filters.ts";
import type { Column, TableRef } from "../../catalog/model.ts";
import { columnSummary, type RawFigures } from "../shared/summary.ts";
import type { RecordsSummary } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Param } from "./database.ts";
import {
  checkValues,
  filterCondition,
  filterValueChecks,
  selectedColumns,
  unordered,
} from "./record_filters.ts";
import { onDescribedTable } from "./record_reads.ts";
import { jsonValue } from "./record_values.ts";
import { qualified, quoteIdent } from "./sql.ts";
import { numberType } from "./types.ts";

/** Types without a min and max aggregate: their figures are null. */
const UNORDERED = /^(bytea|json|jsonb|bit.*)$/;

/** The least (or greatest) value of `c`, of `type`, as an aggregate; undefined for none. */
function extreme(c: string, type: string, least: boolean): string | undefined {
  if (UNORDERED.test(type) || unordered(type)) return undefined;
  if (type === "boolean") return least ? `bool_and(${c})` : `bool_or(${c})`;
  // uuid has an order but no min(); its text sorts the same.
  if (type === "uuid") return `${least ? "min" : "max"}(${c}::text)::uuid`;
  return `${least ? "min" : "max"}(${c})`;
}

/**
 * Per column of `select` (all by default), figures of the records `filters` let through, in
 * one transaction under the table's shared lock.
 *
 * @throws {ApiError} 400 for a filter value its column's type cannot take; 404 for no table.
 */
export function summarizeRecords(
  { database }: StoreContext,
  ref: TableRef,
  filters: readonly Filter[],
  select?: readonly string[],
): Promise<RecordsSummary> {
  return database.transaction((session) =>
    onDescribedTable(session, ref, async (table) => {
      const columns = selectedColumns(table, select);
      await checkValues(session, filterValueChecks(table, filters));
      const params: unknown[] = [];
      const where = filters.length > 0 ? ` WHERE ${filterCondition(table, filters, params)}` : "";
      const [row] = await session.rows(
        `${summaryQuery(columns)} FROM ${qualified(table.schema, table.name)}${where}`,
        params as Param[],
      );
      const rows = Number(row!.rows);
      return {
        table: table.name,
        rows,
        columns: columns.map((column, i) => columnSummary(column, rows, figuresOf(i, row!))),
      };
    })
  );
}

/**
 * The SELECT list (with the word SELECT) of the figures of `columns`: each figure one array
 * over the columns, because a statement returns at most 1,664 columns and a table may have
 * 2,000. Identical aggregates are computed once, so the quartiles cost one sort.
 */
function summaryQuery(columns: readonly Column[]): string {
  const figures = {
    counts: [] as string[],
    distincts: [] as string[],
    mins: [] as string[],
    maxs: [] as string[],
    avgs: [] as string[],
    stds: [] as string[],
    q25s: [] as string[],
    q50s: [] as string[],
    q75s: [] as string[],
  };
  for (const column of columns) {
    const c = quoteIdent(column.name);
    figures.counts.push(`count(${c})`);
    figures.distincts.push(`count(DISTINCT ${unordered(column.type) ? `${c}::text` : c})`);
    const least = extreme(c, column.type, true);
    const greatest = extreme(c, column.type, false);
    figures.mins.push(least ? jsonValue(least, column.type) : "NULL");
    figures.maxs.push(greatest ? jsonValue(greatest, column.type) : "NULL");
    const number = numberType(column.type);
    figures.avgs.push(number ? `avg(${c})::float8` : "NULL");
    figures.stds.push(number ? `stddev_samp(${c})::float8` : "NULL");
    const quartiles =
      `percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY ${c}::float8)`;
    figures.q25s.push(number ? `(${quartiles})[1]` : "NULL");
    figures.q50s.push(number ? `(${quartiles})[2]` : "NULL");
    figures.q75s.push(number ? `(${quartiles})[3]` : "NULL");
  }
  const types = {
    counts: "bigint",
    distincts: "bigint",
    mins: "text",
    maxs: "text",
    avgs: "float8",
    stds: "float8",
    q25s: "float8",
    q50s: "float8",
    q75s: "float8",
  };
  const list = Object.entries(figures).map(([name, values]) =>
    `ARRAY[${values.join(", ")}]::${types[name as keyof typeof types]}[] AS ${name}`
  );
  return `SELECT count(*) AS "rows", ${list.join(", ")}`;
}

/** The figures of column `i` of the row of the statement, each figure an array by column. */
function figuresOf(i: number, row: Record<string, unknown>): RawFigures {
  const at = (figure: string) => (row[figure] as unknown[])[i];
  return {
    count: at("counts"),
    distinct: at("distincts"),
    min: at("mins"),
    max: at("maxs"),
    avg: at("avgs"),
    std: at("stds"),
    q25: at("q25s"),
    q50: at("q50s"),
    q75: at("q75s"),
  };
}
