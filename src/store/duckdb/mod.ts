/**
 * The DuckDB store: what the rest of the program may use of it. Nothing outside
 * `src/store/duckdb/` imports the files beside this one or `@duckdb/node-api`.
 *
 * @module
 */

export { checkBackupFile, settleFile } from "./backup.ts";
export { defaultMemoryBytes } from "./database_open.ts";
export { type DuckDBStore, openStore, type StoreOptions } from "./duckdb_store.ts";
export { type ParquetColumn, writeParquet } from "./parquet_writer.ts";
export { catalogDatabase } from "./wire_catalog.ts";
export {
  type InferredColumn,
  openStaging,
  type StagedRows,
  type Staging,
  type StagingRows,
} from "./staging.ts";
