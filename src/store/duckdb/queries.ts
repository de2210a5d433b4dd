/**
 * Clients' read-only queries (`POST /api/v1/query`): checked by query_guard.ts, then the
 * rewritten text run with the bound parameters in a read transaction on a pooled connection
 * (or, sent again, in one statement: see {@link readQuery}), interrupted at its deadline.
 *
 * @module
 */

import {
  BOOLEAN,
  DOUBLE,
  type DuckDBType,
  type DuckDBValue,
  HUGEINT,
  SQLNULL,
  VARCHAR,
} from "@duckdb/node-api";
import type { QueryPage, QueryParam, QueryRequest, ResultColumn, ResultFormat } from "../store.ts";
import { ApiError } from "../../errors.ts";
import { Lru } from "../../lru.ts";
import type { StoreContext } from "./context.ts";
import { madeByQuery, outOfMemory } from "./engine_errors.ts";
import { engineMessage } from "./sql.ts";
import type { Session } from "./database.ts";
import type { Descriptions } from "./descriptions.ts";
import { type CheckedQuery, checkQuery } from "./query_guard.ts";
import { wrongParameterCount } from "../shared/query_rules.ts";
import { type QueryCatalog, readQueryCatalog } from "./query_catalog.ts";
import {
  describeResult,
  type PreparedResult,
  readKnownResult,
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

/** The guard's catalogue, read again only after a change of a table or view. */
export async function queryCatalog(context: StoreContext): Promise<QueryCatalog> {
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
const checks = new WeakMap<QueryCatalog, Lru<string, CheckedQuery>>();

/** The kept check of `request` under `catalog`, if any. */
function keptCheck(request: QueryRequest, catalog: QueryCatalog): CheckedQuery | undefined {
  const key = checkKey(request);
  return key === undefined ? undefined : checks.get(catalog)?.get(key);
}

/** Keeps `value` under `key` for `catalog`, the least recently used beyond CHECKS_KEPT dropped. */
function remember<V>(
  maps: WeakMap<QueryCatalog, Lru<string, V>>,
  catalog: QueryCatalog,
  key: string,
  value: V,
): void {
  let kept = maps.get(catalog);
  if (!kept) maps.set(catalog, kept = new Lru(CHECKS_KEPT));
  kept.set(key, value);
}

/** The key of `request`'s check among the kept, or undefined when its text is too long. */
function checkKey(request: QueryRequest): string | undefined {
  if (request.sql.length > CHECK_KEPT_LENGTH) return undefined;
  return JSON.stringify([request.sql, request.defaultSchema, request.visibleSchemas ?? null]);
}

/** The guard's check of `request` under `catalog`, kept for the next same request. */
export async function check(
  session: Session,
  request: QueryRequest,
  catalog: QueryCatalog,
): Promise<CheckedQuery> {
  const hit = keptCheck(request, catalog);
  if (hit) return hit;
  const scope = {
    defaultSchema: request.defaultSchema,
    visibleSchemas: request.visibleSchemas,
    catalog,
  };
  const checked = await checkQuery(session, request.sql, scope);
  const key = checkKey(request);
  if (key !== undefined) remember(checks, catalog, key, checked);
  return checked;
}

/**
 * The columns of checked queries, per catalogue, keyed by their check's key and their
 * parameters, each with the type it binds as: DuckDB binds a statement again with its
 * parameters' values, and a value can change a column's type (a `strptime` format with `%z`
 * or without) as well as a type can. Kept only from a read during which no change began or
 * ended, so they are the columns of any snapshot of that catalogue; with them a page of the
 * query's rows is one statement (see {@link readQuery}).
 */
const described = new WeakMap<QueryCatalog, Lru<string, readonly ResultColumn[]>>();

/**
 * The key of `request`'s columns among the {@link described}, or undefined when its text or
 * its parameters are too long to keep.
 */
function describedKey(request: QueryRequest): string | undefined {
  const key = checkKey(request);
  if (key === undefined) return undefined;
  const params = JSON.stringify(
    request.params.map((p) => [String(boundType(p)), typeof p === "bigint" ? String(p) : p]),
  );
  return params.length > CHECK_KEPT_LENGTH ? undefined : JSON.stringify([key, params]);
}

/** A query whose check and columns are kept. */
export interface KnownQuery {
  readonly sql: string;
  readonly columns: readonly ResultColumn[];
}

/**
 * `request`'s check and columns, when both are kept for `catalog` and no change of a
 * definition began or ended since `stamp`, taken before the catalogue was looked up: a
 * statement of it bound (or read) while `descriptions.unchangedSince(stamp)` still holds has
 * those columns. Undefined otherwise.
 */
export function knownQuery(
  { descriptions }: StoreContext,
  request: QueryRequest,
  catalog: QueryCatalog,
  stamp: number,
): KnownQuery | undefined {
  const key = describedKey(request);
  const columns = key === undefined ? undefined : described.get(catalog)?.get(key);
  const kept = columns && keptCheck(request, catalog);
  // While a change is under way (stamp -1) nothing could count.
  if (!columns || !kept || !descriptions.unchangedSince(stamp)) return undefined;
  return { sql: kept.sql, columns };
}

/**
 * Keeps `columns` as `request`'s under `catalog` when they were read while no change began
 * or ended since `stamp` (taken before the catalogue was looked up).
 */
export function keepColumns(
  { descriptions }: StoreContext,
  request: QueryRequest,
  catalog: QueryCatalog,
  columns: readonly ResultColumn[],
  stamp: number,
): void {
  const key = describedKey(request);
  if (key !== undefined && descriptions.unchangedSince(stamp)) {
    remember(described, catalog, key, columns);
  }
}

/** 2^127: HUGEINT holds the integers below it in magnitude. */
const HUGEINT_LIMIT = 2n ** 127n;

/** Whether `param` binds as HUGEINT: an integer HUGEINT holds (1e20 does; 1e308 does not). */
function integral(param: QueryParam): param is number | bigint {
  if (typeof param === "bigint") return param < HUGEINT_LIMIT && param > -HUGEINT_LIMIT;
  return typeof param === "number" && Number.isInteger(param) &&
    Math.abs(param) < Number(HUGEINT_LIMIT);
}

/**
 * The type a parameter binds as, given to the bindings rather than left to them: they bind
 * an integral `number` as INTEGER or BIGINT, and one beyond BIGINT (1e20, 1e308) failed with
 * "bigint out of int64 range". An integer HUGEINT holds binds as HUGEINT (exact), any other
 * number as DOUBLE, text as VARCHAR, a boolean as BOOLEAN, null as NULL.
 */
function boundType(param: QueryParam): DuckDBType {
  if (param === null) return SQLNULL;
  if (typeof param === "string") return VARCHAR;
  if (typeof param === "boolean") return BOOLEAN;
  return integral(param) ? HUGEINT : DOUBLE;
}

/**
 * A parameter's value as bound as its {@link boundType}: an integer as a `bigint`, a `bigint`
 * beyond HUGEINT as the nearest double.
 */
function bound(param: QueryParam): DuckDBValue {
  if (integral(param)) return BigInt(param);
  return typeof param === "bigint" ? Number(param) : param;
}

/** The query's bound values and their types. */
export function boundParams(params: readonly QueryParam[]) {
  return { values: params.map(bound), types: params.map(boundType) };
}

/**
 * `prepare` of a result: the check and the description of its columns, in the result's
 * snapshot; `described` hears the catalogue checked against and the columns.
 */
function checked(
  context: StoreContext,
  request: QueryRequest,
  described?: (catalog: QueryCatalog, columns: readonly ResultColumn[]) => void,
) {
  return async (session: Session): Promise<PreparedResult> => {
    const catalog = await queryCatalog(context);
    const { sql } = await check(session, request, catalog);
    const query = { sql, ...boundParams(request.params) };
    const columns = await describeResult(session, query);
    described?.(catalog, columns);
    return { query, columns };
  };
}

/**
 * The bindings' refusal of a value past the statement's last parameter, which names how many
 * the statement has: "Failed to bind value: Invalid Input Error: Can not bind to parameter
 * number 2, statement only has 1 parameter(s)".
 */
const TOO_MANY_PARAMS = /Can not bind to parameter number \d+, statement only has (\d+) parameter/;

/**
 * A 400 quoting DuckDB for an error of the query's own, or saying how many parameters it
 * takes when it was sent more; any other error as it is.
 */
export function queryFailure(error: unknown, request: QueryRequest): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  const takes = TOO_MANY_PARAMS.exec(error.message);
  if (takes) return wrongParameterCount(Number(takes[1]), request.params.length);
  if (!madeByQuery(error)) return outOfMemory(error) ?? error;
  return ApiError.badRequest(`The query failed: ${engineMessage(error)}`);
}

/**
 * At most `limit` rows of a checked query as JSON array text, and whether more followed.
 * A query whose check and columns are kept for the current catalogue is read in one
 * statement, with no transaction around a description (about 1.3 ms less). Its answer, or
 * its failure, counts only when no change of a definition began or ended from before the
 * catalogue was looked up to after the rows were read (the columns may no longer be the
 * query's); otherwise the query is read again as any other, in the time it has left.
 */
export async function readQuery(
  context: StoreContext,
  request: QueryRequest,
  limit: number,
): Promise<QueryPage> {
  const began = performance.now();
  try {
    const { descriptions } = context;
    const stamp = descriptions.stamp();
    const catalog = await queryCatalog(context);
    const known = knownQuery(context, request, catalog, stamp);
    if (known) {
      const query = { sql: known.sql, ...boundParams(request.params) };
      const read = await readKnownResult(context, query, known.columns, limit, {
        timeoutMs: request.timeoutMs,
      }).then((page) => ({ page }), (error) => ({ error }));
      if (descriptions.unchangedSince(stamp)) {
        if ("error" in read) throw read.error;
        return read.page;
      }
    }
    const timeoutMs = request.timeoutMs - (performance.now() - began);
    if (timeoutMs <= 0) throw ApiError.queryTimeout(request.timeoutMs / 1000);
    let seen: { catalog: QueryCatalog; columns: readonly ResultColumn[] } | undefined;
    const prepare = checked(context, request, (catalog, columns) => seen = { catalog, columns });
    const page = await readResult(context, prepare, limit, { timeoutMs }).catch((error) => {
      // Past the deadline the query was given, not the time it had left.
      if (error instanceof ApiError && error.status === 408) {
        throw ApiError.queryTimeout(request.timeoutMs / 1000);
      }
      throw error;
    });
    if (seen) keepColumns(context, request, seen.catalog, seen.columns, stamp);
    return page;
  } catch (error) {
    throw queryFailure(error, request);
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
    throw queryFailure(error, request);
  }
}
