/**
 * How a column's values spread, for a summary's `bins` and `top`, written once for both
 * engines: a histogram of equal-width bins between the least and greatest value of a number,
 * date or timestamp column, and the most frequent values of a text, boolean or UUID column,
 * each over the rows the summary's filters let through. An engine gives its type names and
 * expressions ({@link DistributionDialect}).
 *
 * @module
 */

import type { Column } from "../../catalog/model.ts";
import type { HistogramBin, SummaryOptions, TopValue } from "../store.ts";
import type { ListSession } from "./core.ts";
import { quoteIdent } from "./sql.ts";

/** What a histogram or a top list makes of a column's type. */
export type ValueKind =
  | "integer"
  | "number"
  | "date"
  | "timestamp"
  | "timestamptz"
  /** Text, booleans, UUIDs: values counted one by one. */
  | "category";

/** What an engine says of its types and writes its own way. */
export interface DistributionDialect {
  /** The kind of values of `type`, or undefined for a type neither figure applies to. */
  kind(type: string): ValueKind | undefined;
  /** The engine's name of a double-precision float. */
  readonly float: string;
  /**
   * A float expression of column `c` of `kind`: the value for numbers, days since 1970-01-01
   * for dates, seconds since 1970-01-01 00:00:00 (UTC) for timestamps.
   */
  asNumber(c: string, kind: ValueKind): string;
  /** The JSON text of column `c` of `type`, as records show its values. */
  json(c: string, type: string): string;
}

/** Where the values come from: a table, the filters' condition ("" for none), its values. */
export interface ValueSource {
  readonly from: string;
  readonly where: string;
  readonly values: readonly unknown[];
}

/** The most a float holds: the bounds that leave out NaN and the infinities. */
const FLOAT_MAX = "1.7976931348623157e308";

/**
 * A histogram of `bins` bins of column `column`'s values in `source`, or null for a column
 * that is not a number, date or timestamp. Bins are of equal width from the least value to
 * the greatest; each holds `from ≤ v < to`, the last `from ≤ v ≤ to`. Integers and dates get
 * whole widths (fewer bins when there are fewer values than bins). NaN and infinities are left
 * out. No value gives no bin.
 */
export async function histogram(
  session: ListSession,
  dialect: DistributionDialect,
  source: ValueSource,
  column: Column,
  bins: number,
): Promise<HistogramBin[] | null> {
  const kind = dialect.kind(column.type);
  if (!kind || kind === "category") return null;
  const c = quoteIdent(column.name);
  const where = `${source.where ? `(${source.where}) AND ` : ""}${c} IS NOT NULL`;
  const values = `(SELECT ${dialect.asNumber(c, kind)} AS v FROM ${source.from} WHERE ${where})` +
    ` AS s WHERE v BETWEEN -${FLOAT_MAX}::${dialect.float} AND ${FLOAT_MAX}::${dialect.float}`;
  const [range] = await session.rows(
    `SELECT min(v) AS lo, max(v) AS hi FROM ${values}`,
    [...source.values],
  );
  if (range?.lo === null || range?.lo === undefined) return [];
  const lo = Number(range.lo);
  const hi = Number(range.hi);
  const whole = kind === "integer" || kind === "date";
  const width = whole
    ? Math.max(1, Math.ceil((hi - lo + 1) / bins))
    : hi > lo
    ? (hi - lo) / bins
    : 1;
  const count = whole ? Math.ceil((hi - lo + 1) / width) : hi > lo ? bins : 1;
  const n = source.values.length;
  const rows = await session.rows(
    `SELECT floor((v - $${n + 1}::${dialect.float}) / $${n + 2}::${dialect.float}) AS bin,
       count(*) AS n FROM ${values} GROUP BY 1`,
    [...source.values, lo, width],
  );
  const counts = new Array<number>(count).fill(0);
  for (const row of rows) {
    const bin = Math.min(Math.max(Number(row.bin), 0), count - 1);
    counts[bin]! += Number(row.n);
  }
  return counts.map((n, i) => ({
    from: edge(lo + i * width, kind),
    to: edge(i === count - 1 ? hi : lo + (i + 1) * width, kind),
    count: n,
  }));
}

/** A bin's edge as records show a value of `kind`. */
function edge(value: number, kind: ValueKind): number | string {
  switch (kind) {
    case "date":
      return new Date(Math.round(value) * 86_400_000).toISOString().slice(0, 10);
    case "timestamp":
      return new Date(value * 1000).toISOString().slice(0, -1);
    case "timestamptz":
      return new Date(value * 1000).toISOString();
    default:
      return value;
  }
}

/**
 * The `top` most frequent values of column `column` in `source` with their counts, most
 * frequent first (ties in the values' order), or null for a column that is not text,
 * boolean or UUID. Nulls are left out (the summary counts them).
 */
export async function topValues(
  session: ListSession,
  dialect: DistributionDialect,
  source: ValueSource,
  column: Column,
  top: number,
): Promise<TopValue[] | null> {
  if (dialect.kind(column.type) !== "category") return null;
  const c = quoteIdent(column.name);
  const where = `${source.where ? `(${source.where}) AND ` : ""}${c} IS NOT NULL`;
  const rows = await session.rows(
    `SELECT ${dialect.json("s.v", column.type)} AS value, s.n FROM (
       SELECT ${c} AS v, count(*) AS n FROM ${source.from} WHERE ${where}
       GROUP BY ${c} ORDER BY count(*) DESC, ${c} LIMIT ${top}) AS s
     ORDER BY s.n DESC, s.v`,
    [...source.values],
  );
  return rows.map((r) => ({ value: JSON.parse(r.value as string), count: Number(r.n) }));
}

/**
 * The figures of {@link histogram} and {@link topValues} for each of `columns`, as the members
 * a column's summary gains: `histogram` when `bins` were asked for, `top` when `top` was.
 */
export async function distributions(
  session: ListSession,
  dialect: DistributionDialect,
  source: ValueSource,
  columns: readonly Column[],
  request: SummaryOptions,
): Promise<{ histogram?: HistogramBin[] | null; top?: TopValue[] | null }[]> {
  const figures = [];
  for (const column of columns) {
    figures.push({
      ...(request.bins > 0
        ? { histogram: await histogram(session, dialect, source, column, request.bins) }
        : {}),
      ...(request.top > 0
        ? { top: await topValues(session, dialect, source, column, request.top) }
        : {}),
    });
  }
  return figures;
}
