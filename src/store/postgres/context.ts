/**
 * What the PostgreSQL store's operations share: the database and where to report what fails
 * after a commit. Nothing here is cached across requests: several instances of the service
 * may work on one database, so what one of them remembered could be stale.
 *
 * @module
 */

import type { Logger } from "../../log.ts";
import type { Database } from "./database.ts";

/** The state every operation of the store works with. */
export interface StoreContext {
  readonly database: Database;
  /** Where the store reports what fails after a change has committed. */
  readonly logger?: Logger;
  /**
   * A directory for the store's own files (a Parquet result is written there by DuckDB); a
   * temporary directory per use when absent.
   */
  readonly spoolDir?: string;
}
