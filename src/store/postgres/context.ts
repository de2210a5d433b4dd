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
  /**
   * The deadline of each statement of a records page, a summary, an export (each batch of
   * it) and the filter of a change by filter, in ms (read_bounds.ts); a query brings its own.
   */
  readonly readTimeoutMs: number;
}
