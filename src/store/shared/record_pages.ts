/**
 * The engine-neutral parts of reading a page of records: the default read, the checks of
 * its row counts, the read a choice makes, the aliases of its sort keys, its WHERE clause, and the page answer with
 * the next cursor.
 *
 * @module
 */

import type { ReadQuery } from "../../catalog/filters.ts";
import type { Table } from "../../catalog/model.ts";
import type { RecordsChoice, RecordsPage, RecordsQuery } from "../store.ts";
import { cursorAfter } from "./cursor.ts";
import type { OrderKey } from "./record_terms.ts";
import { quoteIdent } from "./sql.ts";

/** A read of every record and column, in record order, counted. */
export const ALL_RECORDS: ReadQuery = { filters: [], order: [], count: "exact" };

/**
 * Throws unless `offset` and `limit` are row counts: safe integers, not negative. The routes
 * check them for the client; this guards the SQL they are written into.
 */
export function checkRowCounts(offset: number, limit: number): void {
  for (const n of [offset, limit]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`Not a row count: ${n}`);
  }
}

/** The read `query` makes of `table`: itself, or what a {@link RecordsChoice} chooses. */
export function chosen(query: RecordsQuery | RecordsChoice, table: Table): RecordsQuery {
  return typeof query === "function" ? query(table) : query;
}

/**
 * A sort key's alias in a page: a leading space, which no column name has.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keyAlias } from "./record_pages.ts";
 *
 * assert.equal(keyAlias(0), '" k0"');
 * ```
 */
export function keyAlias(index: number): string {
  return quoteIdent(` k${index}`);
}

/**
 * The cursor after a page whose last row's key texts are the JSON array `last`, when `more`
 * rows follow; after an empty page (`limit=0`, no `last`) the one it started from.
 */
export function nextCursor(
  keys: readonly OrderKey[],
  after: string,
  more: boolean,
  last: string | undefined,
): string | null {
  if (!more) return null;
  return last === undefined ? after : cursorAfter(keys, JSON.parse(last));
}

/**
 * A page's answer: its JSON array text, the total when the statement counted one (null or
 * undefined for none), and the next cursor when the read walks by cursor.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pageAnswer } from "./record_pages.ts";
 *
 * assert.deepEqual(pageAnswer("[]", 0n), { json: "[]", total: 0 });
 * ```
 */
export function pageAnswer(json: string, total: unknown, next?: string | null): RecordsPage {
  return {
    json,
    ...(total === null || total === undefined ? {} : { total: Number(total) }),
    ...(next === undefined ? {} : { next }),
  };
}

/**
 * A WHERE clause (with its leading space) joining the `conditions` given, or "" for none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { whereClause } from "./record_pages.ts";
 *
 * assert.equal(whereClause("a > 1", undefined, "b = 2"), " WHERE a > 1 AND b = 2");
 * assert.equal(whereClause(""), "");
 * ```
 */
export function whereClause(...conditions: (string | undefined)[]): string {
  const given = conditions.filter((c) => c);
  return given.length > 0 ? ` WHERE ${given.join(" AND ")}` : "";
}
