/**
 * PostgreSQL's catalog as the protocol's clients query it, emulated in an in-memory DuckDB of
 * its own that holds the token's schemas and tables and nothing else: `pg_namespace`,
 * `pg_class`, `pg_attribute`, `pg_type`, `pg_index`, `pg_constraint`, … in schema `wire_pg`,
 * `information_schema`'s views in `wire_is`, and PostgreSQL's catalog functions as macros. A
 * client's catalog query is respelled for it (`pg_catalog.` and `information_schema.` to those
 * schemas, `OPERATOR(pg_catalog.~)`, `COLLATE pg_catalog.default`, `::regclass`) and run there
 * with file access off and the configuration locked: it can reach no row of any table and no
 * name outside the token's schemas. The instance is shared by the sessions that see the same
 * catalog, so every statement run there is prepared, which takes one statement only, and must
 * be a SELECT: a query the respelling cut into several, or anything but a read, is refused.
 *
 * @module
 */

import {
  type DuckDBConnection,
  DuckDBInstance,
  type DuckDBPreparedStatement,
  type DuckDBValue,
  StatementType,
} from "@duckdb/node-api";
import { type CatalogSnapshot, sessionSettings } from "../shared/wire_catalog.ts";
import type { QueryRequest, WireColumn, WireRows } from "../store.ts";
import { interruptAfter } from "./interrupts.ts";
import { catalogStatements } from "./wire_catalog_tables.ts";
import { catalogRewrite } from "./wire_catalog_rewrite.ts";
import { preparedColumns, wireColumns, wireSelect } from "./wire_values.ts";
import { ApiError } from "../../errors.ts";
import { engineMessage, quoteLiteral } from "./sql.ts";

/** An emulated catalog, ready for queries. */
export interface CatalogDatabase {
  /** The columns of a catalog query and the oids of its parameters. */
  describe(request: QueryRequest): Promise<{ columns: WireColumn[]; params: number[] }>;
  /** The rows of a catalog query. */
  open(request: QueryRequest): Promise<WireRows>;
}

/** Emulated catalogs kept, by what they hold, the least recently used closed first. */
const kept = new Map<string, Promise<DuckDBInstance>>();
const KEPT = 16;

async function instanceOf(snapshot: CatalogSnapshot): Promise<DuckDBInstance> {
  const key = JSON.stringify(snapshot);
  let instance = kept.get(key);
  if (instance) {
    kept.delete(key);
    kept.set(key, instance);
    return await instance;
  }
  instance = (async () => {
    const db = await DuckDBInstance.create(":memory:", {
      autoinstall_known_extensions: "false",
      autoload_known_extensions: "false",
      threads: "1",
      memory_limit: "64MB",
    });
    const connection = await db.connect();
    try {
      for (const statement of catalogStatements(snapshot)) await connection.run(statement);
      // Each table written again whole: DuckDB 1.5.5 crashed the process scanning, from
      // another connection, a boolean column of an in-memory table that ALTER or UPDATE had
      // touched (UpdateSegment::FetchUpdates); a table made by one CREATE … AS has no updates.
      const tables = await connection.runAndReadAll(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE schema_name IN ('wire_pg', 'wire_is')",
      );
      for (const [schema, name] of tables.getRows() as [string, string][]) {
        const table = `${schema}.${name}`;
        await connection.run(`CREATE TABLE ${schema}.wire_copy AS SELECT * FROM ${table}`);
        await connection.run(`DROP TABLE ${table}`);
        await connection.run(`ALTER TABLE ${schema}.wire_copy RENAME TO ${name}`);
      }
      // PostgreSQL divides integers as integers (`current_setting(…)::int/100`).
      await connection.run("SET GLOBAL integer_division = true");
      await connection.run("SET enable_external_access = false");
      await connection.run("SET lock_configuration = true");
    } finally {
      connection.closeSync();
    }
    return db;
  })();
  kept.set(key, instance);
  // The oldest is forgotten, not closed: a query may still be running on it, and closing an
  // instance under a connection crashes the process; it closes when collected.
  if (kept.size > KEPT) kept.delete(kept.keys().next().value!);
  try {
    return await instance;
  } catch (error) {
    kept.delete(key);
    throw error;
  }
}

/** A catalog query's failure as a 400 quoting DuckDB, as `POST /query` answers one. */
function failure(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  return ApiError.badRequest(`The query failed: ${engineMessage(error)}`);
}

/** Idle connections of each emulated catalog, their search path set. */
const idle = new WeakMap<DuckDBInstance, DuckDBConnection[]>();

/**
 * A connection of `db`, from its idle ones when there is one: connections are kept and used
 * again rather than closed after each query, as the store's own pool does.
 */
async function connect(db: DuckDBInstance): Promise<DuckDBConnection> {
  const connection = idle.get(db)?.pop();
  if (connection) return connection;
  const made = await db.connect();
  await made.run("SET search_path = 'wire_pg,wire_is,main'");
  return made;
}

/**
 * Sets `request`'s session settings on `connection` for the catalog's `current_setting` and
 * `pg_settings` to read (wire_catalog_macros.ts): a connection variable, as each query of
 * the shared emulated catalog may come from another session.
 */
async function withSessionSettings(
  connection: DuckDBConnection,
  request: QueryRequest,
): Promise<void> {
  const settings = sessionSettings(request);
  await connection.run(
    settings.length === 0
      ? "RESET VARIABLE wire_settings"
      : `SET VARIABLE wire_settings = MAP {${
        settings.map(([name, value]) => `${quoteLiteral(name)}: ${quoteLiteral(value)}`).join(", ")
      }}`,
  );
}

/** Gives `connection` back to `db`'s idle ones. */
function release(db: DuckDBInstance, connection: DuckDBConnection): void {
  let list = idle.get(db);
  if (!list) idle.set(db, list = []);
  if (list.length < 4) list.push(connection);
}

/**
 * `sql` prepared on `connection`: one statement, a SELECT (400 otherwise, as the guard
 * answers a query that is no read). Destroy it after use.
 */
async function preparedRead(
  connection: DuckDBConnection,
  sql: string,
): Promise<DuckDBPreparedStatement> {
  const prepared = await connection.prepare(sql);
  if (prepared.statementType !== StatementType.SELECT) {
    prepared.destroySync();
    throw ApiError.badRequest("A catalog query must be one SELECT statement");
  }
  return prepared;
}

/** The rows of `sql`, one SELECT, with `values` bound. */
async function readAll(connection: DuckDBConnection, sql: string, values: DuckDBValue[]) {
  const prepared = await preparedRead(connection, sql);
  try {
    if (values.length > 0) prepared.bind(values);
    return await prepared.runAndReadAll();
  } finally {
    prepared.destroySync();
  }
}

/**
 * The emulated catalog of `snapshot`, built once for what it holds: each query runs on its
 * own connection, under the request's deadline.
 */
export async function catalogDatabase(snapshot: CatalogSnapshot): Promise<CatalogDatabase> {
  const db = await instanceOf(snapshot);
  const values = (request: QueryRequest): DuckDBValue[] =>
    request.params.map((p) => typeof p === "bigint" ? Number(p) : p);
  return {
    async describe(request) {
      const connection = await connect(db);
      try {
        await withSessionSettings(connection, request);
        const prepared = await preparedRead(connection, catalogRewrite(request.sql));
        const columns = preparedColumns(prepared);
        const params = new Array(prepared.parameterCount).fill(0);
        prepared.destroySync();
        return { columns: wireColumns(columns), params };
      } catch (error) {
        throw failure(error);
      } finally {
        release(db, connection);
      }
    },
    async open(request) {
      const connection = await connect(db);
      const deadline = interruptAfter(connection, request.timeoutMs);
      try {
        await withSessionSettings(connection, request);
        const sql = catalogRewrite(request.sql);
        // The query alone first: wrapped, a query that closes its own parenthesis could be
        // taken for one statement with the wrapping's remains.
        (await preparedRead(connection, sql)).destroySync();
        const reader = await readAll(
          connection,
          `SELECT * FROM (${sql}) AS "described" LIMIT 0`,
          values(request),
        );
        const types = reader.columnTypes();
        const columns = wireColumns(
          reader.columnNames().map((name, i) => ({
            name,
            type: types[i]!.alias ?? String(types[i]),
          })),
        );
        const all = await readAll(connection, wireSelect(sql, columns), values(request));
        let rows = all.getRows() as (string | null)[][];
        return {
          columns,
          next(count) {
            const batch = rows.slice(0, count);
            rows = rows.slice(count);
            return Promise.resolve(batch);
          },
          close() {
            rows = [];
            return Promise.resolve();
          },
        };
      } catch (error) {
        throw deadline.error() ?? failure(error);
      } finally {
        deadline.clear();
        release(db, connection);
      }
    },
  };
}
