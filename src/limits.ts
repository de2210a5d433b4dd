/**
 * Sizes shared by the configuration, which checks them, and the store, which lives by them.
 * Kept apart from the store so that the configuration (and the commands that use it) imports
 * no database code.
 *
 * @module
 */

/**
 * Memory the DuckDB store sets aside for each statement reading a file (a load) at once, and
 * so the least memory limit it runs under. DuckDB's JSON reader alone allocates 32 MiB of
 * buffers for any file (twice its 16 MiB `maximum_object_size`, which cannot be lowered); a
 * load that finds the limit reached fails with "Out of Memory" instead of waiting.
 */
export const DUCKDB_READER_BYTES = 96 * 1024 ** 2;
