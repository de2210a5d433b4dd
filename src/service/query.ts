/**
 * Clients' read-only SQL: one query, checked and run by the store, answered as a page of
 * JSON rows or streamed whole in a file format.
 *
 * @module
 */

import type { QueryPage, QueryRequest, ResultColumn, ResultFormat, Store } from "../store/store.ts";

/** The formats a query's result is given in. */
export { RESULT_FORMATS } from "../store/store.ts";

/** Rows of a JSON answer when the request names no `limit`. */
export const DEFAULT_QUERY_ROWS = 1_000;

/** Most rows of a JSON answer; the streamed formats have no cap. */
export const MAX_QUERY_ROWS = 10_000;

/** What running a query needs. */
export interface QueryDeps {
  readonly store: Store;
}

/** At most `limit` rows of the query, and whether more followed. */
export async function readQuery(
  deps: QueryDeps,
  request: QueryRequest,
  limit: number,
): Promise<QueryPage> {
  return await deps.store.queries.read(request, limit);
}

/** The whole result of the query in `format`, streamed from one snapshot. */
export async function streamQuery(
  deps: QueryDeps,
  request: QueryRequest,
  format: ResultFormat,
): Promise<{ columns: readonly ResultColumn[]; stream: ReadableStream<Uint8Array> }> {
  return await deps.store.queries.stream(request, format);
}
