/**
 * What the PostgreSQL store's operations share: the database, the staging of loads, the
 * directory for files and the descriptions of tables last taken. Several instances of the
 * service may work on one database, so what one of them remembered could be stale: a
 * remembered description is used only with a check, in the same transaction, that it holds.
 *
 * @module
 */

import type { Staging } from "../duckdb/mod.ts";
import type { Database } from "./database.ts";
import type { KnownDescriptions } from "./descriptions.ts";

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
  /** Tables as this process last described them (descriptions.ts). */
  readonly descriptions: KnownDescriptions;
}
