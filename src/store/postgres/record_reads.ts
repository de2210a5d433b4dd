/**
 * Pages of records out of PostgreSQL tables, as JSON text PostgreSQL renders (filtered,
 * selected, ordered, walked by cursor), with the count of the rows the filters let through.
 *
 * @module
 */

import type { ReadQuery } from "../../catalog/filters.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import type { RecordsPage, RecordsQuery } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Param, Session } from "./database.ts";
import { schemaLock, tableLock, takeLocks } from "./locks.ts";
import { describeTables } from "./metadata_describe.ts";
import { afterCondition, cursorAfter, cursorValues, keyText } from "./record_cursor.ts";
import {
  checkValues,
  filterCondition,
  filterValueChecks,
  orderBy,
  selectedColumns,
  type SortKey,
  sortKeys,
} from "./record_filters.ts";
import { jsonObject } from "./record_values.ts";
import { qualified, quoteIdent } from "./sql.ts";
import { existingTable } from "./tables.ts";

const ALL: ReadQuery = { filters: [], order: [], count: "exact" };

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
 * and the count and the page in one statement, so they agree.
 *
 * @throws {ApiError} 400 for a filter or cursor value its column's type cannot take, or a
 * cursor of another order; 404 for no such table.
 */
export function readRecords(
  { database }: StoreContext,
  ref: TableRef,
  offset: number,
  limit: number,
  query: RecordsQuery = { read: ALL },
): Promise<RecordsPage> {
  for (const n of [offset, limit]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`Not a row count: ${n}`);
  }
  return database.transaction((session) =>
    onDescribedTable(session, ref, (table) => readPage(session, table, offset, limit, query))
  );
}

/** A sort key's alias in a page: a leading space, which no column name has. */
function keyAlias(index: number): string {
  return quoteIdent(` k${index}`);
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
  const cursor = after ? cursorValues(keys, after) : undefined;
  await checkValues(session, [
    ...filterValueChecks(table, read.filters),
    ...(cursor?.checks ?? []),
  ]);
  const conditions = [
    ...(filtered ? [filtered] : []),
    ...(cursor ? [afterCondition(keys, cursor.texts, params)] : []),
  ];
  const where = conditions.length > 0 ? ` WHERE ${conditions.join(" AND ")}` : "";
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
    return pageOf(answer);
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
  return pageOf(answer, nextCursor(keys, after, Boolean(answer?.more), answer?.last));
}

/**
 * The cursor after a page whose last row's key texts are `last` (JSON text), when more rows
 * follow; after an empty page (`limit=0`) the one it started from.
 */
function nextCursor(
  keys: readonly SortKey[],
  after: string,
  more: boolean,
  last: unknown,
): string | null {
  if (!more) return null;
  return typeof last === "string" ? cursorAfter(keys, JSON.parse(last)) : after;
}

function pageOf(answer: Record<string, unknown> | undefined, next?: string | null): RecordsPage {
  const total = answer?.total;
  return {
    json: `[${(answer?.json as string | null) ?? ""}]`,
    ...(total === null || total === undefined ? {} : { total: Number(total) }),
    ...(next === undefined ? {} : { next }),
  };
}
