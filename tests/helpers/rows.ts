/**
 * Test support: a records body as the store receives it, spooled in small parts.
 *
 * @module
 */

import { RowsInParts } from "../../src/ingest/spool.ts";

/** `stream` as a plain JSON array of records, spooled in `dir` in parts of `partBytes`. */
export function rowsInParts(
  stream: ReadableStream<Uint8Array>,
  dir: string,
  partBytes = 4096,
): RowsInParts {
  return new RowsInParts(stream, undefined, {
    spoolDir: dir,
    maxBytes: 1 << 30,
    idleMs: 30_000,
    envelope: false,
    allowArrays: false,
    maxEnvelopeBytes: 1 << 20,
    keySampleRows: 1000,
    partBytes,
  });
}
