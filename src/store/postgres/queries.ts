/**
 * Clients' read-only queries (`POST /api/v1/query`) on PostgreSQL: checked on PostgreSQL's
 * own grammar by query_guard.ts, the tables they read checked to exist, then run as written
 * with the bound parameters in a `READ ONLY` snapshot under `statement_timeout` of the
 * request's deadline, with a search path of `pg_catalog`, the default schema and `pg_temp`
 * last (result_formats.ts reads and renders the rows).
 *
 * The query runs under the service's own role: PostgreSQL's `READ ONLY` refuses every write
 * (and `nextval`, `SELECT … INTO`, `FOR UPDATE`), the guard admits only listed functions and
 * no catalogue or service schema, and the timeout bounds the time. A `SET LOCAL ROLE` to a
 * reader role would also bound what a hole in the guard could reach, but every table would
 * need a `GRANT SELECT` kept in step by every change of every instance; not done yet.
 *
 * @module
 */

import { printable } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { QueryPage, QueryRequest, ResultFormat } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { INSERTION_COLUMN } from "./ddl.ts";
import type { Session } from "./database.ts";
import { explained } from "./engine_errors.ts";
import { checkPostgresQuery, loadPostgresParser } from "./query_guard.ts";
import {
  readSelect,
  type SelectOptions,
  type SelectQuery,
  type StreamedSelect,
  streamSelect,
} from "./result_formats.ts";
import { quoteIdent } from "./sql.ts";

/**
 * SQLSTATE classes of errors the query itself causes (data exceptions, syntax or access
 * rules: an unknown column, a type that does not fit), and single states of the same kind
 * (more than one row from a scalar subquery, a feature PostgreSQL does not support): 400,
 * as DuckDB's binder and conversion errors are.
 */
const MADE_BY_QUERY = /^(22|42|2201|21000|0A000|2202)/;

/** A 400 quoting PostgreSQL for an error of the query's own; any other as the engine maps it. */
function queryFailure(error: unknown): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && MADE_BY_QUERY.test(code)) {
    return ApiError.badRequest(`The query failed: ${error.message}`);
  }
  return explained(error);
}

/**
 * The guard's check, then the source of the query's snapshot: the tables it reads must exist
 * as tables or views (400, as DuckDB answers an unknown table), and the search path is set.
 */
async function checked(request: QueryRequest): Promise<(session: Session) => Promise<SelectQuery>> {
  await loadPostgresParser();
  const { tables, parameters } = checkPostgresQuery(request.sql, {
    defaultSchema: request.defaultSchema,
    visibleSchemas: request.visibleSchemas,
  });
  if (request.params.length !== parameters) {
    throw ApiError.badRequest(
      `The query takes ${parameters} parameter${
        parameters === 1 ? "" : "s"
      }, but ${request.params.length} ${request.params.length === 1 ? "was" : "were"} given`,
    );
  }
  return async (session) => {
    if (tables.length > 0) {
      const missing = await session.rows(
        `SELECT q.s, q.t
           FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(s, t, n)
          WHERE NOT EXISTS (
            SELECT FROM pg_catalog.pg_class c
              JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
             WHERE ns.nspname = q.s AND c.relname = q.t AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))
          ORDER BY q.n LIMIT 1`,
        [tables.map((t) => t.schema), tables.map((t) => t.name)],
      );
      const [first] = missing;
      if (first) {
        throw ApiError.badRequest(
          `The query reads "${printable(String(first.s))}.${
            printable(String(first.t))
          }", which is not a table`,
        );
      }
    }
    await session.run(
      `SET LOCAL search_path = pg_catalog, ${quoteIdent(request.defaultSchema)}, pg_temp`,
    );
    return { sql: request.sql, params: request.params };
  };
}

function options(request: QueryRequest): SelectOptions {
  return { timeoutMs: request.timeoutMs, failure: queryFailure, hidden: INSERTION_COLUMN };
}

/** At most `limit` rows of a checked query as JSON array text, and whether more followed. */
export async function readQuery(
  context: StoreContext,
  request: QueryRequest,
  limit: number,
): Promise<QueryPage> {
  const source = await checked(request);
  return await readSelect(context, source, limit, options(request));
}

/** The whole result of a checked query in `format`, streamed from one snapshot. */
export async function streamQuery(
  context: StoreContext,
  request: QueryRequest,
  format: ResultFormat,
): Promise<StreamedSelect> {
  const source = await checked(request);
  return await streamSelect(context, source, format, options(request));
}
