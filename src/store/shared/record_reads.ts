/**
 * Reads of records as SQL, written once for both engines: a page chosen on the stored values
 * by its filters, cursor, order, offset and limit, only its rows rendered, with the count of
 * the rows the filters let through in the same statement so that they agree; and the SELECT
 * of an export. An engine gives how a row becomes JSON and how the cursor texts of a page's
 * last row come out ({@link PageDialect}), beside its read grammar.
 *
 * @module
 */

import type { ReadQuery } from "../../catalog/filters.ts";
import type { Column, Table } from "../../catalog/model.ts";
import type { RecordsPage, RecordsQuery } from "../store.ts";
import { cursorValues } from "./cursor.ts";
import { keyAlias, nextCursor, pageAnswer, whereClause } from "./record_pages.ts";
import {
  afterCondition,
  type Binder,
  filterCondition,
  type FilterDialect,
  filterValueChecks,
  type SortKey,
  sortKeys,
} from "./record_filters.ts";
import { orderBy, selectedColumns, type ValueCheck } from "./record_terms.ts";
import { qualified, quoteIdent } from "./sql.ts";

/** What an engine writes its own way in a page's statement. */
export interface PageDialect {
  /** The JSON object text of a row of `columns`, read from the subquery `page`. */
  jsonRow(columns: readonly Column[]): string;
  /** The cursor texts of a page row's keys (`page.` and their aliases), as a JSON array text. */
  keyTexts(keys: readonly SortKey[]): string;
}

/** A page read made SQL, its values bound. */
export interface PagePlan {
  readonly columns: Column[];
  readonly keys: SortKey[];
  /** What must convert before a statement binds the values: run them first. */
  readonly checks: ValueCheck[];
  /** How many of the bound values are the filters': a count of its own binds only these. */
  readonly filterValues: number;
  /** A subquery counting the rows the filters let through, or NULL when none is asked. */
  readonly counting: string;
  /** The subquery counting the rows the filters let through, whatever the read asked. */
  readonly exactCount: string;
  /** The SELECT of a row's mark (`1`) for each row the filters let through, for estimates. */
  readonly matching: string;
  /** The SELECT of the page's `rows` rows with their keys, aliased (`keyAlias`). */
  page(rows: number): string;
  /** The ORDER BY list of the page's rows in the subquery `page`, by their keys' aliases. */
  readonly pageOrder: string;
}

/** The columns a SELECT of `table` lists: `*` when that is all of them and no more. */
function selectList(dialect: FilterDialect<never, never>, table: Table, read: ReadQuery) {
  const columns = selectedColumns(table, read.select);
  const all = !read.select && !dialect.hiddenColumns;
  return { columns, list: all ? ["*"] : columns.map((c) => quoteIdent(c.name)) };
}

/**
 * The statement parts of a page of `table` from `offset`, `query`'s filters and cursor
 * bound into `bound`.
 *
 * @throws {ApiError} 400 for a column the table lacks, `is.true` on one not boolean, or a
 * cursor that is not one of this order.
 */
export function planPage<B extends Binder & { readonly values: readonly unknown[] }>(
  dialect: FilterDialect<unknown, B>,
  table: Table,
  offset: number,
  { read, after }: RecordsQuery,
  bound: B,
): PagePlan {
  const target = qualified(table.schema, table.name);
  const { columns, list } = selectList(dialect, table, read);
  const keys = sortKeys(dialect, table, read.order);
  const filtered = read.filters.length > 0
    ? filterCondition(dialect, table, read.filters, bound)
    : "";
  const filterValues = bound.values.length;
  const exactCount = `(SELECT count(*) FROM ${target}${whereClause(filtered)})`;
  // An empty cursor starts a walk: its first page.
  const cursor = after ? cursorValues(keys, after, (key) => key.type) : undefined;
  const where = whereClause(filtered, cursor && afterCondition(dialect, keys, cursor.texts, bound));
  const selected = [...list, ...keys.map((k, i) => `${k.sql} AS ${keyAlias(i)}`)].join(", ");
  return {
    columns,
    keys,
    checks: [...filterValueChecks(dialect, table, read.filters), ...(cursor?.checks ?? [])],
    filterValues,
    counting: read.count === "exact" ? exactCount : "NULL",
    exactCount,
    matching: `SELECT 1 FROM ${target}${whereClause(filtered)}`,
    page: (rows) =>
      `SELECT ${selected} FROM ${target}${where} ORDER BY ${
        orderBy(keys)
      } LIMIT ${rows} OFFSET ${offset}`,
    pageOrder: orderBy(keys, (_k, i) => `page.${keyAlias(i)}`),
  };
}

/**
 * The one statement of a page of `limit` rows: its total (or NULL) and its rows as JSON
 * text; when `walking`, one row more is read, to know whether another page follows, and the
 * last row's key texts come out for the next cursor. The page is chosen on the stored values
 * and only its rows are rendered: rendered in the same SELECT as the ORDER BY, every row of
 * the table would be turned into JSON first.
 */
export function pageStatement(
  dialect: PageDialect,
  plan: PagePlan,
  limit: number,
  walking: boolean,
): string {
  const row = dialect.jsonRow(plan.columns);
  if (!walking) {
    return `SELECT ${plan.counting} AS total, (SELECT string_agg(${row}, ',' ORDER BY ${plan.pageOrder}) FROM (${
      plan.page(limit)
    }) AS page) AS json`;
  }
  // The rows and their keys in order as one text, each row's JSON and then its keys after a
  // unit separator, rows apart by record separators: control characters no JSON text holds
  // raw. Cut after `limit` by pageOf: gathering rows and keys as two lists, or numbering the
  // rows (row_number), cost DuckDB about a millisecond more a page.
  return `SELECT ${plan.counting} AS total, string_agg(${row} || ${sqlChar(UNIT)} || ${
    dialect.keyTexts(plan.keys)
  }, ${sqlChar(RECORD)} ORDER BY ${plan.pageOrder}) AS walk FROM (${plan.page(limit + 1)}) AS page`;
}

/** Between a walked row's JSON and its keys' texts, and between rows: ASCII's separators. */
const UNIT = "\x1f";
const RECORD = "\x1e";

/** `separator` in SQL, by its character code. */
function sqlChar(separator: string): string {
  return `chr(${separator.charCodeAt(0)})`;
}

/**
 * The page {@link pageStatement}'s row gives (of at most `limit` rows), with the next cursor of
 * a walk from `after`.
 */
export function pageOf(
  plan: PagePlan,
  row: Record<string, unknown> | undefined,
  limit: number,
  after: string | undefined,
): RecordsPage {
  if (after === undefined) {
    return pageAnswer(`[${(row?.json as string | null | undefined) ?? ""}]`, row?.total);
  }
  const walk = row?.walk as string | null | undefined;
  const rows = walk ? walk.split(RECORD) : [];
  const kept = rows.slice(0, limit).map((r) => {
    const at = r.lastIndexOf(UNIT);
    return { json: r.slice(0, at), keys: r.slice(at + 1) };
  });
  const json = `[${kept.map((r) => r.json).join(",")}]`;
  const more = rows.length > limit;
  return pageAnswer(json, row?.total, nextCursor(plan.keys, after, more, kept[limit - 1]?.keys));
}

/**
 * The SELECT of a records read, for any code that reads records: `read`'s selected columns
 * (all by default, never a hidden one), in table order, of the rows its filters let through,
 * in its order made total (see {@link sortKeys}; record order by default), unless `sorted`
 * is false. Filter values are bound into `bound`; `read.count` does not apply. Check the
 * values of {@link filterValueChecks} of `read.filters` before it runs, so that a bad value
 * is a 400 naming its column. `columns` are what the statement returns, in order.
 *
 * @throws {ApiError} 400 for a column the table lacks or `is.true` on a column not boolean.
 */
export function recordsSelect<B extends Binder>(
  dialect: FilterDialect<unknown, B>,
  table: Table,
  read: ReadQuery,
  bound: B,
  sorted = true,
): { sql: string; columns: Column[] } {
  const { columns, list } = selectList(dialect, table, read);
  const where = read.filters.length > 0
    ? ` WHERE ${filterCondition(dialect, table, read.filters, bound)}`
    : "";
  const order = sorted ? ` ORDER BY ${orderBy(sortKeys(dialect, table, read.order))}` : "";
  return {
    sql: `SELECT ${list.join(", ")} FROM ${qualified(table.schema, table.name)}${where}${order}`,
    columns,
  };
}
