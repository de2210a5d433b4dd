/**
 * Clients' read-only queries (`POST /api/v1/query`) on PostgreSQL: checked on PostgreSQL's
 * own grammar by query_guard.ts, the tables they read checked to exist and read without their
 * hidden column (query_tables.ts), then run with the bound parameters in a `READ ONLY`
 * snapshot under `statement_timeout` of the request's deadline and `work_mem` of
 * read_bounds.ts, with a search path of `pg_catalog`, the default schema and `pg_temp` last
 * (result_formats.ts reads and renders the rows).
 *
 * The query runs under the service's own role: PostgreSQL's `READ ONLY` refuses every write
 * (and `nextval`, `SELECT … INTO`, `FOR UPDATE`), the guard admits only listed functions and
 * no catalogue or service schema, and the timeout bounds the time. A `SET LOCAL ROLE` to a
 * reader role would also bound what a hole in the guard could reach, but every table would
 * need a `GRANT SELECT` kept in step by every change of every instance; not done yet.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { QueryPage, QueryRequest, ResultFormat } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { explained } from "./engine_errors.ts";
import { checkPostgresQuery } from "./query_guard.ts";
import { wrongParameterCount } from "../shared/query_rules.ts";
import { withPostgresParser } from "./query_parser.ts";
import { visibleColumns, withoutHiddenColumns } from "./query_tables.ts";
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
 * rules: an unknown column, a type that does not fit; PostgreSQL's program limits: a value
 * past 1 GB, a stack too deep), and single states of the same kind (more than one row from a
 * scalar subquery, a feature PostgreSQL does not support, temporary files past the server's
 * `temp_file_limit`): 400, as DuckDB's binder and conversion errors are.
 */
const MADE_BY_QUERY = /^(22|42|54|21000|0A000|53400)/;

/** A 400 quoting PostgreSQL for an error of the query's own; any other as the engine maps it. */
export function queryFailure(error: unknown): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && MADE_BY_QUERY.test(code)) {
    return ApiError.badRequest(`The query failed: ${error.message}`);
  }
  return explained(error);
}

/**
 * The guard's check, then the source of the query's snapshot: the tables it reads must exist
 * as tables or views (400, as DuckDB answers an unknown table) and are read without their
 * hidden column, and the search path is set.
 */
export async function checked(
  request: QueryRequest,
  options: { readonly anyParams?: boolean } = {},
): Promise<(session: Session) => Promise<SelectQuery>> {
  const scope = { defaultSchema: request.defaultSchema, visibleSchemas: request.visibleSchemas };
  const check = await withPostgresParser((parser) =>
    checkPostgresQuery(request.sql, scope, parser)
  );
  const { parameters } = check;
  // A statement described before it is bound runs with every parameter NULL.
  const params = options.anyParams ? new Array(parameters).fill(null) : request.params;
  if (params.length !== parameters) {
    throw wrongParameterCount(parameters, request.params.length);
  }
  return async (session) => {
    const columns = await visibleColumns(session, check.tables);
    await session.run(
      `SET LOCAL search_path = pg_catalog, ${quoteIdent(request.defaultSchema)}, pg_temp`,
    );
    const sql = await withPostgresParser((parser) =>
      withoutHiddenColumns(request.sql, check, columns, parser)
    );
    return { sql, params };
  };
}

function options(request: QueryRequest): SelectOptions {
  return { timeoutMs: request.timeoutMs, failure: queryFailure };
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
