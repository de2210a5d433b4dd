/**
 * The rows a load hands the store: bytes in the spool (rows as newline-delimited JSON, a CSV
 * file) or still arriving in parts. Part of the Store interface (store.ts).
 *
 * @module
 */

import type { RowsSummary } from "../ingest/json_rows_summary.ts";
import type { RowsInMemory } from "../ingest/spool.ts";

/**
 * Bytes the store reads, as a stream; and, when they lie in a file on local disk, where,
 * for an engine that reads files itself. The store only reads them: whoever made them
 * removes them.
 */
export interface ByteSource {
  /** The bytes from their start, in a new stream at each call. */
  stream(): ReadableStream<Uint8Array>;
  /** The absolute path of a local file holding exactly these bytes, when there is one. */
  readonly localFile?: string;
}

/** Rows as newline-delimited JSON, one row per line, and what the pass learned of them. */
export interface RowsSource extends RowsSummary, ByteSource {}

/** A CSV file's bytes; its first line with any text is the header. */
export interface CsvSource extends ByteSource {
  /**
   * False when no line of the file is only separators (so none is a line of empty fields
   * to leave out); unknown when absent.
   */
  readonly separatorLines?: boolean;
}

/** A closed part of rows still arriving: whole rows, as in {@link RowsSource}. */
export interface RowsPart extends ByteSource {
  /** What was known of the rows when the part closed; for the last part, all of it. */
  readonly progress: RowsSummary;
  /** Whether the rows ended with this part. */
  readonly last: boolean;
}

/**
 * Rows still arriving: parts of the body (whole rows) as they close, and the whole body
 * (or, when small, its bytes in memory) once it is there. All throw what the body's spool
 * throws.
 */
export interface ArrivingRows {
  parts(): AsyncIterable<RowsPart>;
  whole(): Promise<RowsSource>;
  /** The whole body when it was small enough to stay in memory (then no part comes). */
  inMemory(): Promise<RowsInMemory | undefined>;
}
