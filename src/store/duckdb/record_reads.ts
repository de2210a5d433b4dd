/**
 * Records out of DuckDB tables: pages read as JSON (filtered, selected, ordered, walked by
 * cursor), and exports (result_formats.ts) streamed from one snapshot.
 *
 * @module
 */

import { checkExportable } from "../shared/exports.ts";
import { underDeadline } from "./interrupts.ts";
import type { ReadQuery } from "../../catalog/filters.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import {
  ALL_RECORDS,
  checkRowCounts,
  chosen,
  keyAlias,
  nextCursor,
  pageAnswer,
} from "../shared/record_pages.ts";
import { estimatedTotal, withEstimate } from "../shared/estimates.ts";
import { DUCKDB_ESTIMATES } from "./estimates.ts";
import {
  type PageDialect,
  pageOf,
  type PagePlan,
  pageStatement,
  planPage,
  recordsSelect,
} from "../shared/record_reads.ts";
import type { RecordsChoice, RecordsPage, RecordsQuery, ResultFormat } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { describeIn, getTable } from "./tables.ts";
import { quoteIdent } from "./sql.ts";
import { jsonMembers, jsonObject } from "./values.ts";
import { streamResult } from "./result_formats.ts";
import {
  BoundValues,
  checkFilterValues,
  checkValues,
  DUCKDB,
  keyText,
  selectedColumns,
  type SortKey,
} from "./record_filters.ts";

/** The order records are read in: primary key order, else insertion order. */
export function recordOrder(table: Table): string {
  const pk = table.constraints.primary_key;
  return pk ? pk.columns.map(quoteIdent).join(", ") : "rowid";
}

/**
 * Columns of a page rendered by one statement. Each expression of a statement holds vectors
 * sized to the rows (up to 2,048), and DuckDB's optimizer (common_subexpressions) takes time
 * growing with the square of the expressions: a page of 100 rows of 2,000 columns ran out of
 * 256 MiB in one statement, and 3 rows of 2,000 BIGINT columns took 12.5 s; in slices of 100
 * columns, 1 s.
 */
const RENDER_SLICE = 100;

/**
 * Whether {@link readPage} reads `columns` in more than one statement, which must then
 * share a snapshot: a transaction around it.
 */
export function readsInSlices(columns: readonly unknown[]): boolean {
  return columns.length > RENDER_SLICE;
}

/**
 * {@link readRecords} of a described table: one page of records as a JSON array text, the
 * number of records the filters let through and, for a cursor walk, the next cursor. For many
 * columns ({@link readsInSlices}), call it in a transaction.
 */
export async function readPage(
  session: Session,
  table: Table,
  offset: number,
  limit: number,
  query: RecordsQuery = { read: ALL_RECORDS },
): Promise<RecordsPage> {
  checkRowCounts(offset, limit);
  const bound = new BoundValues();
  const plan = planPage(DUCKDB, table, offset, query, bound);
  await checkValues(session, plan.checks);
  if (query.read.count === "estimated") {
    const filterValues = bound.values.slice(0, plan.filterValues);
    const counted = await estimatedTotal(DUCKDB_ESTIMATES, session, {
      table,
      filtered: query.read.filters.length > 0,
      matching: plan.matching,
      values: filterValues,
      count: async () =>
        Number((await session.rows(`SELECT ${plan.exactCount} AS n`, filterValues))[0]?.n ?? 0),
    });
    return withEstimate(await renderPage(session, plan, bound, limit, query), counted);
  }
  return await renderPage(session, plan, bound, limit, query);
}

/** The page {@link readPage} planned, its values checked. */
async function renderPage(
  session: Session,
  plan: PagePlan,
  bound: BoundValues,
  limit: number,
  query: RecordsQuery,
): Promise<RecordsPage> {
  const { after } = query;
  // The checked integers are written into the statement: without bound values it is one call
  // to DuckDB. One statement is one snapshot without a transaction around it.
  if (!readsInSlices(plan.columns)) {
    const [row] = await session.rows(
      pageStatement(PAGES, plan, limit, after !== undefined),
      bound.values,
    );
    return pageOf(plan, row, limit, after);
  }
  // Each row's members, a slice of columns at a time, in the caller's snapshot.
  const { columns, keys, page, pageOrder } = plan;
  const [counted] = query.read.count === "exact"
    ? await session.rows(
      `SELECT ${plan.counting} AS total`,
      bound.values.slice(0, plan.filterValues),
    )
    : [];
  let next: string | null | undefined;
  if (after !== undefined) {
    const rows = await session.rows(
      `SELECT ${keyTexts(keys)} AS k FROM (${page(limit + 1)}) AS page ORDER BY ${pageOrder}`,
      bound.values,
    );
    next = nextCursor(keys, after, rows.length > limit, rows[limit - 1]?.k as string | undefined);
  }
  const members: string[] = [];
  for (let from = 0; from < columns.length; from += RENDER_SLICE) {
    const slice = columns.slice(from, from + RENDER_SLICE);
    const parts = await session.rows(
      `SELECT ${jsonMembers(slice, from === 0)} AS part FROM (${
        page(limit)
      }) AS page ORDER BY ${pageOrder}`,
      bound.values,
    );
    parts.forEach((p, i) => members[i] = (members[i] ?? "") + (p.part as string));
  }
  return pageAnswer(
    `[${members.map((m) => `{${m}}`).join(",")}]`,
    counted?.total,
    next,
  );
}

/** The cursor texts of a page row's keys, as a JSON array text. */
function keyTexts(keys: readonly SortKey[]): string {
  return `CAST(to_json([${keys.map((k, i) => keyText(k, keyAlias(i))).join(", ")}]) AS VARCHAR)`;
}

/** How DuckDB renders a page: its rows by jsonObject, a row's key texts as JSON. */
const PAGES: PageDialect = {
  jsonRow: jsonObject,
  keyTexts,
};

/**
 * One page of records of the table at `ref` as JSON array text, with the count of the records
 * `query`'s filters let through (unless it asks for none) and, for a cursor walk, the next
 * cursor; from the page cache when the table has not changed since it was read.
 */
export async function readRecords(
  context: StoreContext,
  ref: TableRef,
  offset: number,
  limit: number,
  choice?: RecordsQuery | RecordsChoice,
): Promise<RecordsPage> {
  // A description from the cache: the read is planned on it, and planned again on the one
  // its snapshot sees when a definition changed meanwhile (withDescription).
  const query = typeof choice === "function" ? choice(await getTable(context, ref)) : choice;
  const key = JSON.stringify([offset, limit, query ?? null]);
  const kept = context.pages.get(ref, key);
  if (kept) return kept;
  const stamp = context.pages.stamp(ref);
  const page = await withDescription(
    context,
    ref,
    (table) => readsInSlices(selectedColumns(table, query?.read.select)),
    (session, table) =>
      readPage(session, table, offset, limit, choice && query && chosen(choice, table)),
  );
  context.pages.keep(ref, key, stamp, page);
  return page;
}

/**
 * `work` on the table at `ref` and its description, consistent with each other: in a
 * transaction when `inSlices` says it runs several statements, which must share a snapshot.
 */
export async function withDescription<T>(
  context: StoreContext,
  ref: TableRef,
  inSlices: (table: Table) => boolean,
  work: (session: Session, table: Table) => Promise<T>,
): Promise<T> {
  const { database, descriptions } = context;
  const stamp = descriptions.stamp();
  const table = await getTable(context, ref);
  const timed = (session: Session, table: Table) =>
    underDeadline(session.connection, context.readTimeoutMs, () => work(session, table));
  const first =
    await (inSlices(table)
      ? database.transaction((session) => timed(session, table))
      : database.withSession((session) => timed(session, table)))
      .then((value) => ({ value }), (error) => ({ error }));
  // No change was under way at any moment of the read, so none committed between the
  // description and the rows. Only the end of a change says it has committed: DuckDB may
  // answer a read that began after the commit before it answers the commit itself.
  if (descriptions.unchangedSince(stamp)) {
    if ("error" in first) throw first.error;
    return first.value;
  }
  // A definition changed meanwhile: read the table and its rows in one snapshot.
  const since = descriptions.stamp();
  return database.transaction(async (session) =>
    timed(session, await describeIn(context, session, ref, since))
  );
}

/**
 * The table's records in `format` (CSV header first), streamed from a consistent snapshot:
 * those `read`'s filters let through, its selected columns, in its order (record order by
 * default; Parquet without an order in the table's storage order, unsorted).
 */
export async function exportRecords(
  context: StoreContext,
  ref: TableRef,
  format: ResultFormat,
  read: ReadQuery = ALL_RECORDS,
): Promise<{ table: Table; stream: ReadableStream<Uint8Array> }> {
  // The table is described in the export's own snapshot: described before it, a rename,
  // retype or drop committed in between leaves the header stale and the statement naming
  // a column or table that is gone. A snapshot rather than the table's shared lock, which
  // would queue behind DDL that waits for a long load, and held while streaming would hold
  // DDL back for as long as the slowest client reads: DuckDB keeps the version the export
  // reads while DDL goes on and commits.
  const since = context.descriptions.stamp();
  let table: Table | undefined;
  const { stream } = await streamResult(context, format, async (session) => {
    const described = table = await describeIn(context, session, ref, since);
    const bound = new BoundValues();
    // Parquet without `order` is written in the table's storage order: a columnar file is
    // read as a set (readers sort or filter it themselves), and sorting the whole table by
    // key would cost more than writing it. The text formats keep record order.
    const sorted = format !== "parquet" || read.order.length > 0;
    const { sql, columns } = recordsSelect(DUCKDB, described, read, bound, sorted);
    checkExportable(described, format);
    await checkFilterValues(session, described, read.filters);
    return {
      query: { sql, values: bound.values },
      columns: columns.map(({ name, type }) => ({ name, type })),
    };
  }, { timeoutMs: context.readTimeoutMs });
  return { table: table!, stream };
}
