/**
 * A result's lines as a byte stream: the text of each row's first column, between the
 * `first` and `last` text of {@link Lines}, read one chunk at a time as the client pulls.
 *
 * @module
 */

import type { DuckDBDataChunk } from "@duckdb/node-api";
import type { Lines } from "./session.ts";

/** What a stream of lines asks of the connection it reads from (see `streamLines`). */
export interface LineReader {
  /** The next rows of the result; null at its end. Throws when the read must stop. */
  read(): Promise<DuckDBDataChunk | null>;
  /** The result was read to its end: its transaction is ended and its connection let go. */
  finish(): Promise<void>;
  /** A read or its end failed: the connection is let go; answers what the client is told. */
  fail(error: unknown): unknown;
  /** A pull is over, read or not: a connection the client left is let go now. */
  settled(): void;
  /** The client went: the connection is let go once no read is under way. */
  cancel(): void;
}

/**
 * The stream of `lines` as `reader` reads them: a pull reads one chunk, so a client that
 * reads slowly holds a connection, never the result. `breakOff` errors the stream at once,
 * pulled or not: its client learns of it as a response cut short.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lineStream } from "./line_stream.ts";
 *
 * const { stream } = lineStream({ first: "[", sql: "", separator: ",", last: "]" }, {
 *   read: () => Promise.resolve(null),
 *   finish: () => Promise.resolve(),
 *   fail: (error) => error,
 *   settled: () => {},
 *   cancel: () => {},
 * });
 * assert.equal(await new Response(stream).text(), "[]");
 * ```
 */
export function lineStream(
  lines: Lines,
  reader: LineReader,
): { stream: ReadableStream<Uint8Array>; breakOff(failure: unknown): void } {
  const encoder = new TextEncoder();
  const { first, separator = "", terminator = "\n", last = "" } = lines;
  let rows = 0;
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start: (started) => {
      controller = started;
      if (first) controller.enqueue(encoder.encode(first));
    },
    pull: async (controller) => {
      try {
        const chunk = await reader.read();
        if (chunk === null) {
          await reader.finish();
          if (last) controller.enqueue(encoder.encode(last));
          controller.close();
          return;
        }
        const texts = chunk.getColumnValues(0) as string[];
        const text = texts.join(terminator + separator) + terminator;
        controller.enqueue(encoder.encode(rows > 0 ? separator + text : text));
        rows += texts.length;
      } catch (error) {
        controller.error(reader.fail(error));
      } finally {
        reader.settled();
      }
    },
    cancel: () => reader.cancel(),
  }, { highWaterMark: 1 });
  return { stream, breakOff: (failure) => controller?.error(failure) };
}
