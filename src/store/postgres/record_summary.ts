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
import type { RecordsSummary, SummaryOptions } from "../store.ts";
import { distributions } from "../shared/distributions.ts";
import { POSTGRES_DISTRIBUTIONS } from "./distributions.ts";
import type { StoreContext } from "./context.ts";
import { type Param, probing } from "./database.ts";
import {
  checkValues,
  filterCondition,
  filterValueChecks,
  selectedColumns,
  unordered,
} from "./record_filters.ts";
import { onDescribedTable } from "./record_reads.ts";
import { boundedTransaction, boundRead } from "./read_bounds.ts";
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
 * one transaction under the table's shared lock and the store's deadline; the statement's
 * sorts, two a column, share one read's `work_mem` (read_bounds.ts).
 *
 * @throws {ApiError} 400 for a filter value its column's type cannot take; 404 for no table;
 * 408 past the deadline.
 */
export function summarizeRecords(
  context: StoreContext,
  ref: TableRef,
  filters: readonly Filter[],
  select?: readonly string[],
  options: SummaryOptions = { bins: 0, top: 0 },
): Promise<RecordsSummary> {
  return boundedTransaction(
    context,
    (session) =>
      onDescribedTable(session, context.descriptions, ref, async (table) => {
        const columns = selectedColumns(table, select);
        await checkValues(session, filterValueChecks(table, filters));
        // count(DISTINCT …) and the quartiles each sort the column.
        await boundRead(session, context.readTimeoutMs, 2 * columns.length);
        const params: unknown[] = [];
        const where = filters.length > 0 ? ` WHERE ${filterCondition(table, filters, params)}` : "";
        const floats = columns.some((c) => FLOATS.has(c.type));
        // In a savepoint only where a retry may follow, so other summaries cost no more.
        const read = (scaled: boolean) =>
          (floats ? probing(session) : session).rows(
            `${summaryQuery(columns, scaled)} FROM ${qualified(table.schema, table.name)}${where}`,
            params as Param[],
          );
        // Float aggregates overflow near float8's limit (22003); only then are the figures
        // read again the slower way, which every aggregate of such a column then pays.
        const [row] = await read(false).catch((error) => {
          const overflow = (error as { code?: string }).code === "22003";
          if (!overflow || !floats) throw error;
          return read(true);
        });
        const rows = Number(row!.rows);
        const spread = options.bins > 0 || options.top > 0
          ? await distributions(
            session,
            POSTGRES_DISTRIBUTIONS,
            {
              from: qualified(table.schema, table.name),
              where: filters.length > 0 ? filterCondition(table, filters, []) : "",
              values: params,
            },
            columns,
            options,
          )
          : [];
        return {
          table: table.name,
          rows,
          columns: columns.map((column, i) => ({
            ...columnSummary(column, rows, figuresOf(i, row!)),
            ...spread[i],
          })),
        };
      }),
  );
}

/**
 * The SELECT list (with the word SELECT) of the figures of `columns`: each figure one array
 * over the columns, because a statement returns at most 1,664 columns and a table may have
 * 2,000. Identical aggregates are computed once, so the quartiles cost one sort. `scaled`
 * figures float columns as {@link floatFigures} does.
 */
function summaryQuery(columns: readonly Column[], scaled: boolean): string {
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
    const { avg, std, quartiles } = scaled && FLOATS.has(column.type) ? floatFigures(c) : {
      avg: `avg(${c})::float8`,
      std: `stddev_samp(${c})::float8`,
      quartiles: `percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY ${c}::float8)`,
    };
    figures.avgs.push(number ? avg : "NULL");
    figures.stds.push(number ? std : "NULL");
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

/** PostgreSQL's floating-point types. */
const FLOATS = new Set(["real", "double precision"]);

/** Below this magnitude a float's squares, summed over any number of rows, stay finite. */
const SQUARABLE = "1e100";

/** 2^-600, exact: values near float8's limit are figured scaled by it, then scaled back. */
const SCALE = "2::float8 ^ -600";

/** Past this a figure scaled back would pass float8's limit (1.797…e308 × 2^-600). */
const SCALED_LIMIT = "4.3e127";

/**
 * The mean, deviation and quartiles of float column `c` as the DuckDB store figures them:
 * PostgreSQL's float aggregates raise "value out of range: overflow" when a sum or a
 * difference of finite values passes float8's limit (1e308 and -1e308), so a column holding
 * a value beyond {@link SQUARABLE} is figured scaled by {@link SCALE}; the deviation of a
 * column holding NaN or an infinity is null, and a figure beyond float8's range too. Every
 * aggregate runs whichever branch is taken, so each is filtered to the rows it can take.
 */
function floatFigures(c: string): { avg: string; std: string; quartiles: string } {
  const finite = (x: string) => `abs(${x}) < 'Infinity'::float8`;
  const large = `count(${c}) FILTER (WHERE NOT abs(${c}) < ${SQUARABLE}) = 0`;
  const small = `FILTER (WHERE abs(${c}) < ${SQUARABLE})`;
  const back = (scaled: string) =>
    `CASE WHEN abs(${scaled}) < ${SCALED_LIMIT} OR NOT ${finite(scaled)} ` +
    `THEN ${scaled} / (${SCALE}) END`;
  const percentiles = (value: string) =>
    `percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY ${value})`;
  const scaledQuartiles = `(SELECT array_agg(${back(`" q"`)} ORDER BY " o") FROM unnest(${
    percentiles(`${c}::float8 * (${SCALE})`)
  } FILTER (WHERE ${finite(c)})) WITH ORDINALITY AS " u"(" q", " o"))`;
  return {
    avg: `CASE WHEN ${large} THEN avg(${c}::float8) ${small} ` +
      `ELSE ${back(`avg(${c}::float8 * (${SCALE}))`)} END`,
    std: `CASE WHEN ${large} THEN stddev_samp(${c}::float8) ${small} ` +
      `WHEN count(${c}) FILTER (WHERE NOT ${finite(c)}) > 0 THEN NULL ` +
      `ELSE ${back(`stddev_samp(${c}::float8 * (${SCALE})) FILTER (WHERE ${finite(c)})`)} END`,
    quartiles: `CASE WHEN ${large} THEN ${percentiles(`${c}::float8`)} ${small} ` +
      `ELSE ${scaledQuartiles} END`,
  };
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
