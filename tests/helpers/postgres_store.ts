/**
 * A PostgreSQL store of its own for a unit test: a fresh database on a test server, with a
 * plain connection pool beside the store for SQL-level checks, both closed however the test
 * ends.
 *
 * @module
 */

import { Database } from "../../src/store/postgres/database.ts";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { freshDatabase, type TestPostgres } from "./postgres.ts";

/** Runs `work` on a store and a plain connection pool over a new database of `server`. */
export async function withPostgresStore<T>(
  server: TestPostgres,
  work: (store: PostgresStore, database: Database, url: string) => Promise<T>,
): Promise<T> {
  const url = await freshDatabase(server);
  const store = await openPostgresStore({ url });
  const database = await Database.open({ url });
  try {
    return await work(store, database, url);
  } finally {
    await database.close();
    await store.close();
  }
}
