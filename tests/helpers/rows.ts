/**
 * Test support: a records body as the store receives it, spooled in small parts.
 *
 * @module
 */

import { RowsInParts } from "../../src/ingest/spool.ts";
import type { ArrivingRows } from "../../src/store/store.ts";

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

/** What a load asked of a body: how many parts, and whether the whole body. */
export interface Asked {
  parts: number;
  whole: boolean;
}

/** `rows` as a load sees them, noting in `asked` what the load asked for. */
export function watched(rows: RowsInParts): { rows: ArrivingRows; asked: Asked } {
  const asked: Asked = { parts: 0, whole: false };
  return {
    asked,
    rows: {
      async *parts() {
        for await (const part of rows.parts()) {
          asked.parts++;
          yield part;
        }
      },
      whole() {
        asked.whole = true;
        return rows.whole();
      },
      inMemory: () => rows.inMemory(),
    },
  };
}
