/**
 * What the PostgreSQL store's operations share: the database, the staging of loads and the
 * directory for files. Nothing here is cached across requests: several instances of the service
 * may work on one database, so what one of them remembered could be stale.
 *
 * @module
 */

import type { Staging } from "../duckdb/mod.ts";
import type { Database } from "./database.ts";

/** The state every operation of the store works with. */
export interface StoreContext {
  readonly database: Database;
  /** The store's own directory for files: staged loads, Parquet results. */
  readonly spoolDir: string;
  /** Reads, checks and converts the rows of loads before they are copied in. */
  readonly staging: Staging;
}
