/**
 * What a client's query may name, read from the database for the guard (query_guard.ts): its
 * tables and views, and the functions that would hide a built-in.
 *
 * @module
 */

import type { DuckDBConnection, DuckDBValue } from "@duckdb/node-api";
import type { TableRef } from "../../catalog/model.ts";
import { PLACEHOLDER_COLUMN } from "./metadata.ts";

/** What runs SQL for the check: a connection, or anything with a Session's `rows`. */
export type QueryRunner =
  | DuckDBConnection
  | { rows(sql: string, values?: DuckDBValue[]): Promise<Record<string, unknown>[]> };

/** What the database holds that a query may name, or that would change what a name means. */
export interface QueryCatalog {
  /** The database's name in DuckDB (its file's name without extension; `memory` in memory). */
  readonly database: string;
  /** Schema (lower case) → table or view name (lower case) → both as the catalogue spells them. */
  readonly tables: ReadonlyMap<string, ReadonlyMap<string, TableRef>>;
  /**
   * Functions and macros (lower case) defined outside DuckDB's system catalogue, temporary ones
   * too. An unqualified call looks in the database's schemas before the built-ins, so a macro
   * `main.abs` would answer `abs(x)`: a call to such a name is refused, whatever the list says.
   */
  readonly shadowing: ReadonlySet<string>;
  /**
   * Tables without columns, as `schema\u0000name` (lower case): DuckDB has no such tables, so
   * the service gives them a hidden placeholder column, which no answer may show.
   */
  readonly columnless: ReadonlySet<string>;
}

/**
 * The database's own tables and views (not temporary ones nor internal views), and the
 * functions defined outside DuckDB's built-ins (see {@link QueryCatalog.shadowing}), the
 * temporary ones of `runner`'s connection included.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DuckDBInstance } from "@duckdb/node-api";
 * import { readQueryCatalog } from "./query_catalog.ts";
 *
 * const instance = await DuckDBInstance.create(":memory:");
 * const connection = await instance.connect();
 * await connection.run("CREATE SCHEMA sales; CREATE TABLE sales.Targets (x INTEGER)");
 * await connection.run("CREATE TEMP MACRO abs(x) AS 42");
 * const catalog = await readQueryCatalog(connection);
 * assert.equal(catalog.database, "memory");
 * assert.deepEqual(catalog.tables.get("sales")?.get("targets"), { schema: "sales", name: "Targets" });
 * assert.ok(catalog.shadowing.has("abs"));
 * connection.closeSync();
 * instance.closeSync();
 * ```
 */
export async function readQueryCatalog(runner: QueryRunner): Promise<QueryCatalog> {
  const found = await rows(
    runner,
    `SELECT schema_name AS s, table_name AS t FROM duckdb_tables()
       WHERE database_name = current_database() AND NOT temporary
     UNION ALL
     SELECT schema_name, view_name FROM duckdb_views()
       WHERE database_name = current_database() AND NOT temporary AND NOT internal`,
    [],
  );
  const tables = new Map<string, Map<string, TableRef>>();
  for (const row of found) {
    const schema = String(row.s);
    const name = String(row.t);
    const inSchema = tables.get(schema.toLowerCase()) ?? new Map<string, TableRef>();
    inSchema.set(name.toLowerCase(), { schema, name });
    tables.set(schema.toLowerCase(), inSchema);
  }
  const functions = await rows(
    runner,
    "SELECT DISTINCT lower(function_name) AS f FROM duckdb_functions() WHERE database_name <> 'system'",
    [],
  );
  const [database] = await rows(runner, "SELECT current_database() AS db", []);
  const placeholders = await rows(
    runner,
    `SELECT lower(schema_name) AS s, lower(table_name) AS t FROM duckdb_columns()
       WHERE database_name = current_database() AND column_name = $1`,
    [PLACEHOLDER_COLUMN],
  );
  return {
    database: String(database?.db),
    tables,
    shadowing: new Set(functions.map((row) => String(row.f))),
    columnless: new Set(placeholders.map((row) => `${row.s}\u0000${row.t}`)),
  };
}

/** `sql`'s rows through `runner`. */
export async function rows(
  runner: QueryRunner,
  sql: string,
  values: DuckDBValue[],
): Promise<Record<string, unknown>[]> {
  if ("runAndReadAll" in runner) {
    return (await runner.runAndReadAll(sql, values)).getRowObjectsJS();
  }
  return await runner.rows(sql, values);
}
