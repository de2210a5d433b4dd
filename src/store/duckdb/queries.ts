/**
 * Clients' read-only queries (`POST /api/v1/query`): checked by query_guard.ts, then the
 * rewritten text run with the bound parameters in a read transaction on a pooled connection,
 * interrupted at its deadline.
 *
 * @module
 */

import type { DuckDBValue } from "@duckdb/node-api";
import type { QueryPage, QueryParam, QueryRequest, ResultFormat } from "../store.ts";
import { ApiError } from "../../errors.ts";
import type { StoreContext } from "./context.ts";
import { madeByQuery, outOfMemory } from "./engine_errors.ts";
import { engineMessage } from "./sql.ts";
import type { Session } from "./database.ts";
import type { Descriptions } from "./descriptions.ts";
import { type CheckedQuery, checkQuery } from "./query_guard.ts";
import { type QueryCatalog, readQueryCatalog } from "./query_catalog.ts";
import {
  type PreparedResult,
  readResult,
  type StreamedResult,
  streamResult,
} from "./result_formats.ts";

/**
 * The guard's catalogue as last read, and the description cache's stamp before that read.
 * Every change of a table or view passes through the description cache, whose generation it
 * bumps; listing DuckDB's functions for the catalogue costs tens of milliseconds, so the
 * catalogue is read again only after such a change.
 */
const catalogs = new WeakMap<Descriptions, { stamp: number; catalog: QueryCatalog }>();

async function queryCatalog(context: StoreContext): Promise<QueryCatalog> {
  const { descriptions } = context;
  const kept = catalogs.get(descriptions);
  if (kept && descriptions.unchangedSince(kept.stamp)) return kept.catalog;
  const stamp = descriptions.stamp();
  // Read now, outside the query's snapshot: a snapshot begun before a change committed
  // would be older than the stamp, and its catalogue kept until the next change.
  const catalog = await context.database.withSession((session) => readQueryCatalog(session));
  // Kept only when no change began or ended while it was read, so it is current.
  if (descriptions.unchangedSince(stamp)) catalogs.set(descriptions, { stamp, catalog });
  return catalog;
}

/** Most checked queries kept per catalogue, the least recently used dropped first. */
const CHECKS_KEPT = 256;

/** Longest query text whose check is kept: 256 of them hold at most a few megabytes. */
const CHECK_KEPT_LENGTH = 8_000;

/**
 * The guard's answers, per catalogue: the check is a function of the text, the scope and the
 * catalogue alone (three parses in DuckDB, about 2 ms), so a query sent again with the same
 * scope gets the same rewrite. Keyed by the catalogue object, they go with it: a change of a
 * table or view makes {@link queryCatalog} read a new one, and no answer of the old is used.
 * Only passes are kept; a refusal is checked again each time.
 */
const checks = new WeakMap<QueryCatalog, Map<string, CheckedQuery>>();

async function check(
  session: Session,
  request: QueryRequest,
  catalog: QueryCatalog,
): Promise<CheckedQuery> {
  const scope = {
    defaultSchema: request.defaultSchema,
    visibleSchemas: request.visibleSchemas,
    catalog,
  };
  if (request.sql.length > CHECK_KEPT_LENGTH) return await checkQuery(session, request.sql, scope);
  const key = JSON.stringify([request.sql, request.defaultSchema, request.visibleSchemas ?? null]);
  let kept = checks.get(catalog);
  const hit = kept?.get(key);
  if (kept && hit) {
    // Most recently used last.
    kept.delete(key);
    kept.set(key, hit);
    return hit;
  }
  const checked = await checkQuery(session, request.sql, scope);
  if (!kept) checks.set(catalog, kept = new Map());
  kept.set(key, checked);
  if (kept.size > CHECKS_KEPT) kept.delete(kept.keys().next().value!);
  return checked;
}

/**
 * A parameter as DuckDB binds it: an integer as HUGEINT (exact, as a JavaScript `bigint`
 * binds; a `number` would bind as DOUBLE), any other number as DOUBLE, text as VARCHAR, a
 * boolean as BOOLEAN, null as NULL.
 */
function bound(param: QueryParam): DuckDBValue {
  return typeof param === "number" && Number.isSafeInteger(param) ? BigInt(param) : param;
}

/** `prepare` of a result: the check, in the result's snapshot, and the checked text. */
function checked(context: StoreContext, request: QueryRequest) {
  return async (session: Session): Promise<PreparedResult> => {
    const catalog = await queryCatalog(context);
    const { sql } = await check(session, request, catalog);
    return { query: { sql, values: request.params.map(bound) } };
  };
}

/** A 400 quoting DuckDB for an error of the query's own; any other error as it is. */
function queryFailure(error: unknown): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  if (!madeByQuery(error)) return outOfMemory(error) ?? error;
  return ApiError.badRequest(`The query failed: ${engineMessage(error)}`);
}

/** At most `limit` rows of a checked query as JSON array text, and whether more followed. */
export async function readQuery(
  context: StoreContext,
  request: QueryRequest,
  limit: number,
): Promise<QueryPage> {
  try {
    return await readResult(context, checked(context, request), limit, {
      timeoutMs: request.timeoutMs,
    });
  } catch (error) {
    throw queryFailure(error);
  }
}

/** The whole result of a checked query in `format`, streamed from one snapshot. */
export async function streamQuery(
  context: StoreContext,
  request: QueryRequest,
  format: ResultFormat,
): Promise<StreamedResult> {
  try {
    return await streamResult(context, format, checked(context, request), {
      timeoutMs: request.timeoutMs,
    });
  } catch (error) {
    throw queryFailure(error);
  }
}
