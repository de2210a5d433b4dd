/**
 * Opening a DuckDB file hardened, after checking that it is a whole DuckDB file.
 *
 * @module
 */

import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import type { Logger } from "../../log.ts";
import { engineMessage, quoteLiteral } from "./sql.ts";

/** Where the database lives and the directories its file readers and writers may touch. */
export interface DatabaseOptions {
  readonly path: string;
  /** Absolute directory DuckDB's readers may access; every other path is refused. */
  readonly spoolDir: string;
  /**
   * Absolute directory backups are written to (see backup.ts), which DuckDB may also reach;
   * none when absent.
   */
  readonly backupDir?: string;
  /** Absolute directory for DuckDB's spill files. */
  readonly tempDir: string;
  /**
   * DuckDB's memory limit in bytes; when absent, {@link Database.open} takes
   * {@link defaultMemoryBytes} and a bare instance DuckDB's own default, 80% of it.
   */
  readonly memoryBytes?: number;
  /**
   * Block size of a database file created now (DuckDB's default, 256 KiB, when absent); an
   * existing file keeps the one it was created with.
   */
  readonly blockBytes?: number;
  /** Threads DuckDB runs a statement on (DuckDB's default, one per CPU core, when absent). */
  readonly threads?: number;
  /** Where a failed database and its reopening are reported. */
  readonly logger?: Logger;
}

/**
 * A DuckDB instance on `options.path`, hardened (see {@link Database.open}); with `readOnly`,
 * one that refuses every write.
 */
export async function openInstance(
  options: DatabaseOptions,
  readOnly = false,
): Promise<DuckDBInstance> {
  const onDisk = options.path !== ":memory:";
  if (onDisk) await checkHeader(options.path);
  let instance: DuckDBInstance;
  try {
    instance = await DuckDBInstance.create(options.path, {
      autoinstall_known_extensions: "false",
      autoload_known_extensions: "false",
      allow_community_extensions: "false",
      temp_directory: options.tempDir,
      ...(options.blockBytes ? { default_block_size: String(options.blockBytes) } : {}),
      ...(options.threads ? { threads: String(options.threads) } : {}),
      ...(readOnly ? { access_mode: "READ_ONLY" } : {}),
      ...(options.memoryBytes
        ? { memory_limit: `${Math.max(1, Math.floor(options.memoryBytes / 1024 ** 2))}MiB` }
        : {}),
    });
  } catch (error) {
    throw new Error(openFailure(error));
  }
  const connection = await instance.connect();
  try {
    if (onDisk) await checkLength(connection, options.path);
    // Order matters: each SET below would be refused after the next one.
    const reachable = [options.spoolDir, ...options.backupDir ? [options.backupDir] : []];
    await connection.run(
      `SET allowed_directories=[${reachable.map((dir) => quoteLiteral(`${dir}/`)).join(", ")}]`,
    );
    // GLOBAL: every later connection renders and reads times in UTC, whatever the
    // machine's zone; a plain SET would reach only this connection.
    await connection.run("SET GLOBAL TimeZone='UTC'");
    // A page of up to 200 rows (the UI's) and the row after it that says whether more
    // follow: DuckDB reads the sort keys of a top-N first and the other columns of its rows
    // only, up to this many rows (50 by default). On a 1M-row table a cursor page of 51 rows
    // took 6.2 ms without it and 4.3 ms with it; past a few hundred rows it costs more than it
    // saves where the filter cannot skip row groups.
    await connection.run(`SET GLOBAL late_materialization_max_rows=${PAGE_ROWS_READ_LATE}`);
    await connection.run("SET enable_external_access=false");
    await connection.run("SET lock_configuration=true");
  } catch (error) {
    // Nothing was written yet: close without a checkpoint.
    connection.closeSync();
    instance.closeSync();
    throw error;
  }
  connection.closeSync();
  return instance;
}

/** The most rows of a top-N whose other columns DuckDB reads after choosing them. */
const PAGE_ROWS_READ_LATE = 201;

/** The least memory {@link defaultMemoryBytes} gives DuckDB. */
const LEAST_DEFAULT_MEMORY = 256 * 1024 ** 2;

/**
 * Half of the memory this process may use, at least 256 MiB: DuckDB's own default (80% of the
 * machine's memory, or of a container's cgroup limit when lower, which DuckDB reads itself)
 * taken to 5/8. The rest is the JavaScript heap's, a spreadsheet worker's and the read bound's.
 */
export async function defaultMemoryBytes(): Promise<number> {
  const instance = await DuckDBInstance.create(":memory:");
  try {
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll(
      "SELECT current_setting('memory_limit') AS limit",
    );
    connection.closeSync();
    return fiveEighths(String(reader.getRowObjectsJS()[0]?.limit));
  } finally {
    instance.closeSync();
  }
}

const UNITS: Record<string, number> = {
  bytes: 1,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
};

/**
 * 5/8 of a memory size as DuckDB prints it (`19.2 GiB`), in whole MiB, at least 256 MiB; the
 * least when it cannot be read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fiveEighths } from "./database_open.ts";
 *
 * assert.equal(fiveEighths("19.2 GiB"), 12288 * 1024 ** 2);
 * assert.equal(fiveEighths("300.0 MiB"), 256 * 1024 ** 2);
 * assert.equal(fiveEighths("lots"), 256 * 1024 ** 2);
 * ```
 */
export function fiveEighths(text: string): number {
  const match = /^([\d.]+)\s*([a-z]+)$/i.exec(text.trim());
  const unit = match && UNITS[match[2]!.toLowerCase()];
  if (!unit) return LEAST_DEFAULT_MEMORY;
  const mib = Math.floor(Number(match[1]) * unit * 5 / 8 / 1024 ** 2);
  return Math.max(LEAST_DEFAULT_MEMORY, mib * 1024 ** 2);
}

/** Bytes before a DuckDB file's first block: a main header and two database headers. */
const HEADERS_BYTES = 3 * 4096;

/**
 * Refuses a file that is not a DuckDB database from its first bytes, before DuckDB opens
 * it: for a SQLite file DuckDB would go looking for an extension instead of saying so.
 */
async function checkHeader(path: string): Promise<void> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return; // A new database.
    throw error;
  }
  const head = new Uint8Array(16);
  let length: number | null;
  try {
    length = await file.read(head);
  } finally {
    file.close();
  }
  const text = String.fromCharCode(...head.subarray(0, length ?? 0));
  // Empty is refused, not taken as new: it is what a failed copy or restore leaves behind.
  if (text === "") throw new Error("the file is empty (remove it to start a new database)");
  if (text.startsWith("SQLite format 3\0")) {
    throw new Error("it is a SQLite database, not a DuckDB one");
  }
  // A checksum, then the magic bytes.
  if (text.slice(8, 12) !== "DUCK") throw new Error("it is not a DuckDB database file");
}

/**
 * Refuses a file too short to hold the blocks in use. DuckDB reads blocks only when a query
 * needs them, so a lost tail would otherwise pass start-up and fail requests later. The
 * header's total may exceed the file (a checkpoint cuts free blocks off the end without
 * lowering it), but every block in use lies within the file.
 */
async function checkLength(connection: DuckDBConnection, path: string): Promise<void> {
  const reader = await connection.runAndReadAll(
    `SELECT total_blocks - free_blocks AS used, block_size FROM pragma_database_size()
     WHERE database_name = current_database()`,
  );
  const [row] = reader.getRowObjectsJS();
  const expected = HEADERS_BYTES + Number(row?.used ?? 0) * Number(row?.block_size ?? 0);
  const { size } = await Deno.stat(path);
  if (size < expected) {
    throw new Error(
      `the file is truncated (${size} bytes, too few for the ${expected} its blocks in use need)`,
    );
  }
}

/** Why DuckDB could not open the file, in a few words and one line. */
function openFailure(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  if (text.includes("Could not set lock on file")) {
    const pid = /\(PID (\d+)\)/.exec(text)?.[1];
    return `another process${pid ? ` (PID ${pid})` : ""} is using it`;
  }
  if (/Corrupt database file|Could not read enough bytes|not a valid DuckDB database/.test(text)) {
    return `the file is damaged (${engineMessage(error)})`;
  }
  const denied = /: (Permission denied|Operation not permitted|Read-only file system)$/m.exec(text);
  if (denied) return `it cannot be opened for reading and writing (${denied[1]})`;
  return engineMessage(error);
}
