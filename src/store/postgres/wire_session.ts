/**
 * A PostgreSQL-protocol transaction on PostgreSQL (store.ts's `WireSession`): one pooled
 * connection in a `REPEATABLE READ READ ONLY` transaction, so its statements read one snapshot;
 * each query checked as `POST /query` checks it (queries.ts), then read through a cursor, each
 * value as the server's own text and each column with the server's own type oid and modifier.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { QueryRequest, WireColumn, WireRows, WireSession } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { checked, queryFailure } from "./queries.ts";
import { holdSession, SETTINGS } from "./result_formats.ts";
import { quoteIdent } from "./sql.ts";
import { catalogDatabase } from "../duckdb/mod.ts";
import { type CatalogSnapshot, isCatalogQuery } from "../shared/wire_catalog.ts";

/** The server's fields as wire columns. */
function columnsOf(
  fields: readonly { name: string; typeId: number; typeModifier: number }[],
): WireColumn[] {
  return fields.map((f) => ({
    name: f.name,
    type: String(f.typeId),
    oid: f.typeId,
    typmod: f.typeModifier,
  }));
}

/** A connection held in a read-only snapshot until {@link WireSession.end}. */
export async function openWireSession(
  context: StoreContext,
  snapshot: (request: QueryRequest) => Promise<CatalogSnapshot>,
): Promise<WireSession> {
  const catalog = async (request: QueryRequest) => await catalogDatabase(await snapshot(request));
  const { session, release } = await holdSession(context.database);
  let uncount = () => {};
  let pid: number;
  try {
    await session.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    uncount = context.database.countTransaction();
    for (const setting of SETTINGS) await session.run(setting);
    pid = Number((await session.rows("SELECT pg_catalog.pg_backend_pid() AS pid"))[0]!.pid);
  } catch (error) {
    uncount();
    await release(error);
    throw error;
  }
  let cursors = 0;
  let cancelled = false;
  let ended = false;
  const failure = (error: unknown, request: QueryRequest) => {
    const code = (error as { code?: unknown }).code;
    if (code === "57014") {
      return cancelled ? error : ApiError.queryTimeout(request.timeoutMs / 1000);
    }
    return queryFailure(error);
  };
  const timed = (session: Session, ms: number) =>
    session.run("SELECT pg_catalog.set_config('statement_timeout', $1, true)", [String(ms)]);
  // A query's columns as PostgreSQL analyses it, every parameter NULL; PostgreSQL's own
  // error when it cannot.
  const described = async (request: QueryRequest) => {
    const source = await checked(request, { anyParams: true });
    await timed(session, request.timeoutMs);
    const query = await source(session);
    const name = quoteIdent(`wire_describe_${++cursors}`);
    await session.run(`DECLARE ${name} NO SCROLL CURSOR FOR ${query.sql}`, query.params);
    const { fields } = await session.texts(`FETCH FORWARD 0 FROM ${name}`);
    await session.run(`CLOSE ${name}`);
    return { columns: columnsOf(fields), params: query.params?.map(() => 0) ?? [] };
  };
  const wire: WireSession = {
    async describe(request) {
      if (isCatalogQuery(request.sql)) return await (await catalog(request)).describe(request);
      cancelled = false;
      try {
        return await described(request);
      } catch (error) {
        throw failure(error, request);
      }
    },
    async check(request) {
      // PostgreSQL's analysis (tables that do not exist, columns, types) comes with the
      // description, as it comes with Parse on PostgreSQL. The emulated catalog's own database
      // says what it cannot answer when it runs.
      if (isCatalogQuery(request.sql)) return;
      cancelled = false;
      try {
        await described(request);
      } catch (error) {
        // Described without the types its client may have declared, a parameter's type can be
        // beyond PostgreSQL's inference ($1 + $2): such a statement, which the guard passed,
        // is analysed when it runs, with its values.
        if (!untypedParameter(error)) throw failure(error, request);
      }
    },
    async open(request) {
      if (isCatalogQuery(request.sql)) return await (await catalog(request)).open(request);
      cancelled = false;
      const source = await checked(request);
      const name = quoteIdent(`wire_${++cursors}`);
      let columns: WireColumn[];
      try {
        await timed(session, request.timeoutMs);
        const query = await source(session);
        await session.run(`DECLARE ${name} NO SCROLL CURSOR FOR ${query.sql}`, query.params);
        columns = columnsOf((await session.texts(`FETCH FORWARD 0 FROM ${name}`)).fields);
      } catch (error) {
        throw failure(error, request);
      }
      let closed = false;
      const rows: WireRows = {
        columns,
        async next(count) {
          try {
            await timed(session, request.timeoutMs);
            const { rows } = await session.texts(`FETCH FORWARD ${count} FROM ${name}`);
            return rows as (string | null)[][];
          } catch (error) {
            throw failure(error, request);
          }
        },
        async close() {
          if (closed) return;
          closed = true;
          await session.run(`CLOSE ${name}`).catch(() => {});
        },
      };
      return rows;
    },
    cancel() {
      cancelled = true;
      void context.database.withSession((other) =>
        other.run("SELECT pg_catalog.pg_cancel_backend($1)", [pid])
      ).catch(() => {});
    },
    async end() {
      if (ended) return;
      ended = true;
      const end = await session.run("ROLLBACK").then(() => undefined, (failed) => failed);
      uncount();
      await release(end);
    },
  };
  return wire;
}

/** Whether `error` is PostgreSQL's for a parameter whose type it could not tell. */
function untypedParameter(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // 42P18: could not determine the data type; 42725: an operator or function not unique.
  return code === "42P18" || code === "42725";
}
