/**
 * Pages of records out of PostgreSQL tables, as JSON text PostgreSQL renders (filtered,
 * selected, ordered, walked by cursor), with the count of the rows the filters let through.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { ALL_RECORDS, checkRowCounts, keyAlias } from "../shared/record_pages.ts";
import { BoundValues } from "../shared/record_filters.ts";
import { type PageDialect, pageOf, pageStatement, planPage } from "../shared/record_reads.ts";
import type { RecordsPage, RecordsQuery } from "../store.ts";
import { estimatedTotal, withEstimate } from "../shared/estimates.ts";
import { POSTGRES_ESTIMATES } from "./estimates.ts";
import type { StoreContext } from "./context.ts";
import type { Param, Session } from "./database.ts";
import { schemaLock, tableLock, takeLocks } from "./locks.ts";
import { boundedTransaction } from "./read_bounds.ts";
import { describeTables } from "./metadata_describe.ts";
import { checkValues, keyText, POSTGRES } from "./record_filters.ts";
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
): Promise<T> {
  await takeLocks(session, [schemaLock(ref.schema, "shared"), tableLock(ref, "shared")]);
  const row = await existingTable(session, ref);
  return await work((await describeTables(session, [row]))[0]!);
}

/**
 * One page of records as a JSON array text, the number of records the filters let through
 * (unless the read asks for none) and, for a cursor walk, the next cursor: one transaction,
 * and the count and the page in one statement, so they agree. Each statement runs under the
 * store's deadline (read_bounds.ts).
 *
 * @throws {ApiError} 400 for a filter or cursor value its column's type cannot take, or a
 * cursor of another order; 404 for no such table; 408 past the deadline.
 */
export function readRecords(
  context: StoreContext,
  ref: TableRef,
  offset: number,
  limit: number,
  query: RecordsQuery = { read: ALL_RECORDS },
): Promise<RecordsPage> {
  checkRowCounts(offset, limit);
  return boundedTransaction(
    context,
    (session) =>
      onDescribedTable(session, ref, (table) => readPage(session, table, offset, limit, query)),
  );
}

/** {@link readRecords} of a described table, in the caller's transaction. */
export async function readPage(
  session: Session,
  table: Table,
  offset: number,
  limit: number,
  query: RecordsQuery,
): Promise<RecordsPage> {
  const bound = new BoundValues<Param>();
  const plan = planPage(POSTGRES, table, offset, query, bound);
  await checkValues(session, plan.checks);
  const walking = query.after !== undefined;
  const [row] = await session.rows(pageStatement(PAGES, plan, limit, walking), bound.values);
  const page = pageOf(PAGES, plan, row, query.after);
  if (query.read.count !== "estimated") return page;
  const filterValues = bound.values.slice(0, plan.filterValues);
  return withEstimate(
    page,
    await estimatedTotal(POSTGRES_ESTIMATES, session, {
      table,
      filtered: query.read.filters.length > 0,
      matching: plan.matching,
      values: filterValues,
      count: async () =>
        Number((await session.rows(`SELECT ${plan.exactCount} AS n`, filterValues))[0]?.n ?? 0),
    }),
  );
}

/** How PostgreSQL renders a page: each row by jsonObject, the last row's key texts in JSON. */
const PAGES: PageDialect = {
  jsonRow: (columns) =>
    jsonObject(
      columns.map((c) => ({ name: c.name, type: c.type, ref: `page.${quoteIdent(c.name)}` })),
    ),
  lastKeys: (keys, limit) =>
    `(array_agg(to_json(ARRAY[${
      keys.map((k, i) => keyText(k, `page.${keyAlias(i)}`)).join(", ")
    }]::text[])::text ORDER BY page." n" DESC) FILTER (WHERE page." n" <= ${limit}))[1]`,
  lastTexts: (value) => typeof value === "string" ? JSON.parse(value) : undefined,
};
