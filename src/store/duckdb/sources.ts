/**
 * Row sources as files DuckDB reads itself: a source's own local file when it lies where
 * DuckDB may read, otherwise its stream spooled to a file of the store's own, removed
 * once read.
 *
 * @module
 */

import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import type { ByteSource } from "../store.ts";
import type { CsvLayout } from "./csv_layout.ts";

/**
 * Rows in a file DuckDB reads, and what is known of them: newline-delimited JSON objects,
 * or with `csv` a CSV file whose header gives the keys.
 */
export interface RowsFile extends RowsSummary {
  readonly path: string;
  readonly csv?: CsvLayout;
}

/** A file holding a source's bytes, and how to let it go once read. */
export interface LocalFile {
  readonly path: string;
  /** Removes the file when the store spooled it; never fails. */
  release(): Promise<void>;
}

/**
 * A file in `spoolDir`, the only directory DuckDB may read, holding `source`'s bytes: its
 * own file when it lies there, else a new one its stream is spooled to.
 */
export async function localFile(spoolDir: string, source: ByteSource): Promise<LocalFile> {
  const own = source.localFile;
  if (own !== undefined && own.startsWith(`${spoolDir}/`) && !own.includes("/../")) {
    return { path: own, release: () => Promise.resolve() };
  }
  const path = `${spoolDir}/${crypto.randomUUID()}.spool`;
  const release = () => Deno.remove(path).catch(() => {});
  try {
    const file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
    await source.stream().pipeTo(file.writable);
  } catch (error) {
    await release();
    throw error;
  }
  return { path, release };
}

/** Runs `work` on a {@link localFile} of `source`, letting the file go afterwards. */
export async function withLocalFile<T>(
  spoolDir: string,
  source: ByteSource,
  work: (path: string) => Promise<T>,
): Promise<T> {
  const file = await localFile(spoolDir, source);
  try {
    return await work(file.path);
  } finally {
    await file.release();
  }
}
