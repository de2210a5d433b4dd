/**
 * The PostgreSQL store: what the rest of the program may use of it. Nothing outside
 * `src/store/postgres/` imports the files beside this one or `pg`.
 *
 * @module
 */

export {
  openPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
} from "./postgres_store.ts";
