/**
 * Pages of records out of PostgreSQL tables, as JSON text PostgreSQL renders (filtered,
 * selected, ordered, walked by cursor), with the count of the rows the filters let through.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { ALL_RECORDS, checkRowCounts, chosen, keyAlias } from "../shared/record_pages.ts";
import { BoundValues } from "../shared/record_filters.ts";
import { type PageDialect, pageOf, pageStatement, planPage } from "../shared/record_reads.ts";
import type { RecordsChoice, RecordsPage, RecordsQuery } from "../store.ts";
import { estimatedTotal, withEstimate } from "../shared/estimates.ts";
import { POSTGRES_ESTIMATES } from "./estimates.ts";
import type { StoreContext } from "./context.ts";
import type { Param, Session } from "./database.ts";
import { lockStatement, schemaLock, tableLock } from "./locks.ts";
import { boundedTransaction } from "./read_bounds.ts";
import { describeNamedBatched, describeTables, namedTable } from "./metadata_describe.ts";
import { checkValues, keyText, LiteralValues, POSTGRES } from "./record_filters.ts";
import { jsonObject } from "./record_values.ts";
import { quoteIdent } from "./sql.ts";
import { existingTable } from "./tables.ts";

/**
 * Runs `work` on table `ref` as described in `session`'s open transaction, under the table's
 * shared lock (and its schema's): a definition change, which takes the table's lock
 * exclusively on any instance, waits for the work, and the work for it, so the description
 * holds until the transaction ends. 404 when the schema or the table does not exist.
 */
export async function onDescribedTable<T>(
  session: Session,
  ref: TableRef,
  work: (table: Table) => Promise<T>,
  before: readonly string[] = [],
): Promise<T> {
  const locks = lockStatement([schemaLock(ref.schema, "shared"), tableLock(ref, "shared")])!;
  // `before`, the locks and the description in one round trip; when missing, existingTable
  // says why.
  const described = (await session.batch([...before, locks, describeNamedBatched(ref)])).at(-1);
  const table = namedTable(described![0]!) ??
    (await describeTables(session, [await existingTable(session, ref)]))[0]!;
  return await work(table);
}

/**
 * One page of records as a JSON array text, the number of records the filters let through
 * (unless the read asks for none) and, for a cursor walk, the next cursor: one transaction,
 * and the count and the page in one statement, so they agree. Each statement runs under the
 * store's deadline (read_bounds.ts). Two round trips: `BEGIN`, the bounds, the locks and the
 * description; then the page, its values written as literals, with `COMMIT`.
 *
 * @throws {ApiError} 400 for a filter or cursor value its column's type cannot take, or a
 * cursor of another order; 404 for no such table; 408 past the deadline.
 */
export async function readRecords(
  context: StoreContext,
  ref: TableRef,
  offset: number,
  limit: number,
  query: RecordsQuery | RecordsChoice = { read: ALL_RECORDS },
): Promise<RecordsPage> {
  checkRowCounts(offset, limit);
  return await boundedTransaction(
    context,
    (session, bounds) =>
      onDescribedTable(
        session,
        ref,
        (table) => readPage(session, table, offset, limit, chosen(query, table), true),
        [bounds],
      ),
    true,
  );
}

/**
 * {@link readRecords} of a described table, in the caller's transaction; with `last`, the
 * transaction's last statement, which commits it in the same round trip.
 */
export async function readPage(
  session: Session,
  table: Table,
  offset: number,
  limit: number,
  query: RecordsQuery,
  last = false,
): Promise<RecordsPage> {
  // Committed with the page, the statement is text: its values are literals.
  const bound: BoundValues<Param> = last ? new LiteralValues() : new BoundValues<Param>();
  const plan = planPage(POSTGRES, table, offset, query, bound);
  await checkValues(session, plan.checks);
  const filterValues = bound.values.slice(0, plan.filterValues);
  // The estimate first, so that the page can be the last statement.
  const counted = query.read.count === "estimated"
    ? await estimatedTotal(POSTGRES_ESTIMATES, session, {
      table,
      filtered: query.read.filters.length > 0,
      matching: plan.matching,
      values: filterValues,
      count: async () =>
        Number((await session.rows(`SELECT ${plan.exactCount} AS n`, filterValues))[0]?.n ?? 0),
    })
    : undefined;
  const statement = pageStatement(PAGES, plan, limit, query.after !== undefined);
  const [row] = last
    ? (await session.runAndCommit(statement)).rows
    : await session.rows(statement, bound.values);
  const page = pageOf(PAGES, plan, row, query.after);
  return counted ? withEstimate(page, counted) : page;
}

/** How PostgreSQL renders a page: each row by jsonObject, a row's key texts in JSON. */
const PAGES: PageDialect = {
  jsonRow: (columns) =>
    jsonObject(
      columns.map((c) => ({ name: c.name, type: c.type, ref: `page.${quoteIdent(c.name)}` })),
    ),
  keyTexts: (keys) =>
    `to_json(ARRAY[${
      keys.map((k, i) => keyText(k, `page.${keyAlias(i)}`)).join(", ")
    }]::text[])::text`,
  lastTexts: (value) => typeof value === "string" ? JSON.parse(value) : undefined,
};
