/**
 * Pages of records out of PostgreSQL tables, as JSON text PostgreSQL renders (filtered,
 * selected, ordered, walked by cursor), with the count of the rows the filters let through.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import {
  ALL_RECORDS,
  checkRowCounts,
  keyAlias,
  nextCursor,
  pageAnswer,
  whereClause,
} from "../shared/record_pages.ts";
import type { RecordsPage, RecordsQuery } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Param, Session } from "./database.ts";
import { schemaLock, tableLock, takeLocks } from "./locks.ts";
import { boundedTransaction } from "./read_bounds.ts";
import { describeTables } from "./metadata_describe.ts";
import { cursorValues } from "../shared/cursor.ts";
import {
  afterCondition,
  checkValues,
  filterCondition,
  filterValueChecks,
  keyText,
  orderBy,
  selectedColumns,
  sortKeys,
} from "./record_filters.ts";
import { jsonObject } from "./record_values.ts";
import { qualified, quoteIdent } from "./sql.ts";
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
async function readPage(
  session: Session,
  table: Table,
  offset: number,
  limit: number,
  { read, after }: RecordsQuery,
): Promise<RecordsPage> {
  const target = qualified(table.schema, table.name);
  const columns = selectedColumns(table, read.select);
  const keys = sortKeys(table, read.order);
  const params: unknown[] = [];
  const filtered = read.filters.length > 0 ? filterCondition(table, read.filters, params) : "";
  // An empty cursor starts a walk: its first page.
  const cursor = after ? cursorValues(keys, after, (key) => key.type) : undefined;
  await checkValues(session, [
    ...filterValueChecks(table, read.filters),
    ...(cursor?.checks ?? []),
  ]);
  const where = whereClause(filtered, cursor && afterCondition(keys, cursor.texts, params));
  // The page is chosen on the stored values and only its rows are rendered. A walk reads one
  // row more, to know whether another page follows.
  const page = (rows: number) =>
    `SELECT ${
      [
        ...columns.map((c) => quoteIdent(c.name)),
        ...keys.map((k, i) => `${k.sql} AS ${keyAlias(i)}`),
      ].join(", ")
    } FROM ${target}${where} ORDER BY ${orderBy(keys)} LIMIT ${rows} OFFSET ${offset}`;
  const pageOrder = orderBy(keys, (_k, i) => `page.${keyAlias(i)}`);
  const counting = read.count === "exact"
    ? `(SELECT count(*) FROM ${target}${filtered ? ` WHERE ${filtered}` : ""})`
    : "NULL";
  const row = jsonObject(
    columns.map((c) => ({ name: c.name, type: c.type, ref: `page.${quoteIdent(c.name)}` })),
  );
  if (after === undefined) {
    const [answer] = await session.rows(
      `SELECT ${counting} AS total, (SELECT string_agg(${row}, ',' ORDER BY ${pageOrder}) FROM (${
        page(limit)
      }) AS page) AS json`,
      params as Param[],
    );
    return pageAnswer(`[${(answer?.json as string | null) ?? ""}]`, answer?.total);
  }
  const keyTexts = `to_json(ARRAY[${
    keys.map((k, i) => keyText(k, `page.${keyAlias(i)}`)).join(", ")
  }]::text[])::text`;
  const [answer] = await session.rows(
    `SELECT ${counting} AS total,
       string_agg(${row}, ',' ORDER BY page." n") FILTER (WHERE page." n" <= ${limit}) AS json,
       count(*) > ${limit} AS more,
       (array_agg(${keyTexts} ORDER BY page." n" DESC) FILTER (WHERE page." n" <= ${limit}))[1]
         AS last
     FROM (SELECT page.*, row_number() OVER (ORDER BY ${pageOrder}) AS " n"
           FROM (${page(limit + 1)}) AS page) AS page`,
    params as Param[],
  );
  const last = typeof answer?.last === "string" ? JSON.parse(answer.last) : undefined;
  return pageAnswer(
    `[${(answer?.json as string | null) ?? ""}]`,
    answer?.total,
    nextCursor(keys, after, Boolean(answer?.more), last),
  );
}
