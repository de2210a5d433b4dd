/**
 * Figures of a table's records, per column, over the rows some filters let through: what
 * DuckDB's `SUMMARIZE` reports, computed by aggregates of our own so that the filters' values
 * stay bound and min and max come out as records show them.
 *
 * @module
 */

import type { Filter } from "../../catalog/filters.ts";
import type { Column, Table, TableRef } from "../../catalog/model.ts";
import { columnSummary, type RawFigures } from "../shared/summary.ts";
import type { ColumnSummary, RecordsSummary, SummaryOptions } from "../store.ts";
import { distributions } from "../shared/distributions.ts";
import { DUCKDB_DISTRIBUTIONS } from "./distributions.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import {
  BoundValues,
  checkFilterValues,
  filterCondition,
  selectedColumns,
} from "./record_filters.ts";
import { withDescription } from "./record_reads.ts";
import { qualified, quoteIdent } from "./sql.ts";
import { jsonValue } from "./values.ts";

/**
 * Columns summarised by one statement: each brings six aggregates, and DuckDB's optimizer
 * takes time growing with the square of a statement's expressions (see record_reads.ts).
 */
const SUMMARY_SLICE = 25;

const NUMBER = /^(U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|FLOAT|DOUBLE|DECIMAL\(\d+, ?\d+\))$/;

/** Types without an order DuckDB's min and max take. */
function unordered(type: string): boolean {
  return type.startsWith("MAP(") || type.includes(" MAP(") || type.includes("(MAP(");
}

/** An alias of a figure, with a leading space, which no column name has. */
function alias(figure: string, index: number): string {
  return quoteIdent(` ${figure} ${index}`);
}

/** Per column of `select` (all by default), figures of the records `filters` let through. */
export async function summarizeRecords(
  context: StoreContext,
  ref: TableRef,
  filters: readonly Filter[],
  select?: readonly string[],
  options: SummaryOptions = { bins: 0, top: 0 },
): Promise<RecordsSummary> {
  // Histograms and top values are statements of their own, in the figures' snapshot.
  const more = options.bins > 0 || options.top > 0;
  return await withDescription(
    context,
    ref,
    (table) => more || selectedColumns(table, select).length > SUMMARY_SLICE,
    (session, table) => summarize(session, table, filters, select, options),
  );
}

async function summarize(
  session: Session,
  table: Table,
  filters: readonly Filter[],
  select: readonly string[] | undefined,
  options: SummaryOptions,
): Promise<RecordsSummary> {
  const columns = selectedColumns(table, select);
  await checkFilterValues(session, table, filters);
  const bound = new BoundValues();
  const where = filters.length > 0 ? ` WHERE ${filterCondition(table, filters, bound)}` : "";
  const source = `${qualified(table.schema, table.name)}${where}`;
  let rows = 0;
  const summaries: ColumnSummary[] = [];
  for (let from = 0; from === 0 || from < columns.length; from += SUMMARY_SLICE) {
    const slice = columns.slice(from, from + SUMMARY_SLICE);
    const [row] = await session.rows(summaryQuery(slice, source), bound.values);
    rows = Number(row!.rows);
    slice.forEach((column, i) => summaries.push(columnSummary(column, rows, figuresOf(i, row!))));
  }
  if (options.bins > 0 || options.top > 0) {
    const condition = filters.length > 0 ? filterCondition(table, filters, new BoundValues()) : "";
    const spread = await distributions(
      session,
      DUCKDB_DISTRIBUTIONS,
      { from: qualified(table.schema, table.name), where: condition, values: bound.values },
      columns,
      options,
    );
    return {
      table: table.name,
      rows,
      columns: summaries.map((summary, i) => ({ ...summary, ...spread[i] })),
    };
  }
  return { table: table.name, rows, columns: summaries };
}

/** One statement giving the figures of `columns` over `source` (a table and its WHERE). */
function summaryQuery(columns: readonly Column[], source: string): string {
  const aggregates = [`count(*) AS "rows"`];
  const rendered = [`"rows"`];
  columns.forEach((column, i) => {
    const c = quoteIdent(column.name);
    aggregates.push(
      `count(${c}) AS ${alias("count", i)}`,
      `approx_count_distinct(${c}) AS ${alias("distinct", i)}`,
    );
    rendered.push(alias("count", i), alias("distinct", i));
    if (!unordered(column.type)) {
      aggregates.push(`min(${c}) AS ${alias("min", i)}`, `max(${c}) AS ${alias("max", i)}`);
      rendered.push(
        `${jsonValue(alias("min", i), column.type)} AS ${alias("min", i)}`,
        `${jsonValue(alias("max", i), column.type)} AS ${alias("max", i)}`,
      );
    }
    if (NUMBER.test(column.type)) {
      aggregates.push(
        `avg(${c})::DOUBLE AS ${alias("avg", i)}`,
        `${standardDeviation(c, column.type)}::DOUBLE AS ${alias("std", i)}`,
        `approx_quantile(${c}, [0.25, 0.5, 0.75])::DOUBLE[] AS ${alias("q", i)}`,
      );
      rendered.push(alias("avg", i), alias("std", i), alias("q", i));
    }
  });
  return `SELECT ${rendered.join(", ")} FROM (SELECT ${
    aggregates.join(", ")
  } FROM ${source}) AS figures`;
}

/**
 * Below this magnitude a DOUBLE's squares, summed over any number of rows, stay finite.
 * DuckDB's `stddev_samp` raises "out of range" when its sum of squares or its result is not
 * finite, which NaN, an infinity or a value near DOUBLE's limit (1e308) all cause.
 */
const SQUARABLE = "1e100";

/**
 * The sample standard deviation of column `c` of `type`, null when a value is NaN or
 * infinite. Integers and decimals stay far below {@link SQUARABLE}. A FLOAT or DOUBLE column
 * holding a larger finite value is computed scaled by 2^-600 (exact: a power of two) and
 * scaled back; its smallest values may then round to 0, which they would not change anyway
 * beside such a value. A deviation beyond DOUBLE's range comes out infinite, shown as null.
 * Every aggregate runs whichever branch is taken, so each is filtered to rows it can take.
 */
function standardDeviation(c: string, type: string): string {
  if (type !== "FLOAT" && type !== "DOUBLE") return `stddev_samp(${c})`;
  return `CASE WHEN count(${c}) FILTER (WHERE NOT abs(${c}) < ${SQUARABLE}) = 0 ` +
    `THEN stddev_samp(${c}) FILTER (WHERE abs(${c}) < ${SQUARABLE}) ` +
    `WHEN count(${c}) FILTER (WHERE NOT isfinite(${c})) > 0 THEN NULL ` +
    `ELSE stddev_samp(${c} * pow(2, -600)) FILTER (WHERE isfinite(${c})) * pow(2, 600) END`;
}

/** The figures of column `i` of a row of the statement {@link summaryQuery} builds. */
function figuresOf(i: number, row: Record<string, unknown>): RawFigures {
  const at = (figure: string) => row[` ${figure} ${i}`];
  const quartiles = (at("q") ?? []) as (number | null)[];
  return {
    count: at("count"),
    distinct: at("distinct"),
    min: at("min"),
    max: at("max"),
    avg: at("avg"),
    std: at("std"),
    q25: quartiles[0],
    q50: quartiles[1],
    q75: quartiles[2],
  };
}
