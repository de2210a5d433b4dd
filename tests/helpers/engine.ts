/**
 * Test support: the engine the HTTP tests run on. With `TEST_ENGINE=postgres` in the test
 * process, every {@link TestServer} gets a fresh database of its own on a shared throwaway
 * PostgreSQL 15: the one `TEST_POSTGRES_URL` names (`tests/run.ts` starts one for the whole
 * run), or else one this module starts for its test file and stops when the file is done.
 * Without it, the servers keep DuckDB's file in their data directory, as the service does by
 * default.
 *
 * @module
 */

import pg from "pg";
import { postgresEnv, startTestPostgres, type TestPostgres } from "./postgres.ts";

/** The engines a test run can choose. */
type Engine = "duckdb" | "postgres";

function engineOf(value: string | undefined): Engine {
  if (value === undefined || value === "" || value === "duckdb") return "duckdb";
  if (value === "postgres") return "postgres";
  throw new Error(`TEST_ENGINE "${value}" is neither "duckdb" nor "postgres"`);
}

/** The engine of this test process: `TEST_ENGINE`, DuckDB when it is unset. */
export const ENGINE: Engine = engineOf(Deno.env.get("TEST_ENGINE"));

/**
 * Whether the tests about DuckDB itself (its file, log, checkpoints, memory limit, block size,
 * file lock) are ignored: they are when the suite runs on PostgreSQL.
 */
export const DUCKDB_ONLY: { readonly ignore: boolean } = { ignore: ENGINE === "postgres" };

/**
 * The tests about DuckDB itself: `onDuckDB.test(name, fn)` is `Deno.test(name, fn)`, ignored
 * on PostgreSQL with the reason in its name.
 *
 * @example
 * ```ts ignore
 * onDuckDB.test("a closing checkpoint that fails exits 1", async () => {});
 * ```
 */
export const onDuckDB = {
  test(name: string, fn: (t: Deno.TestContext) => void | Promise<void>): void {
    Deno.test({
      name: DUCKDB_ONLY.ignore ? `${name} (ignored: a test of DuckDB itself)` : name,
      ignore: DUCKDB_ONLY.ignore,
      fn,
    });
  },
};

let ownServer: Promise<TestPostgres> | undefined;

if (ENGINE === "postgres" && !Deno.env.get("TEST_POSTGRES_URL")) {
  // Registered at import, so it runs once this test file is done; only a started server stops.
  Deno.test.afterAll(async () => {
    const server = await ownServer?.catch(() => undefined);
    ownServer = undefined;
    await server?.stop();
  });
}

/** The server of this file's databases: the run's (`TEST_POSTGRES_URL`), or one of its own. */
function testPostgres(): Promise<TestPostgres> {
  ownServer ??= startTestPostgres().then((server) => {
    if (typeof server === "string") {
      throw new Error(`TEST_ENGINE=postgres, but no PostgreSQL can start: ${server}`);
    }
    return server;
  });
  return ownServer;
}

/**
 * The variables that put a new test server on the engine of this run: on PostgreSQL,
 * `DATABASE_URL` of a new empty database; on DuckDB, none.
 */
export async function engineEnv(): Promise<Record<string, string>> {
  if (ENGINE === "duckdb") return {};
  return await postgresEnv(await testPostgres());
}

/**
 * Drops a database {@link engineEnv} created, whatever connections a stopped or killed
 * service left to it.
 */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!/^t_[0-9a-f]{32}$/.test(name)) throw new Error(`Not a test database: "${name}"`);
  const client = new pg.Client({ connectionString: (await testPostgres()).url });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
