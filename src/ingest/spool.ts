/**
 * Request bodies to files DuckDB reads: streamed to the spool directory, never held whole.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import { JsonRows, type RowsOptions, type RowsSummary } from "./json_rows.ts";

/** Bytes gathered before one write to the spool file. */
const WRITE_BUFFER_BYTES = 1 << 20;

/** A spooled rows array and what the pass learned about it. */
export interface SpooledRows extends RowsSummary {
  /** Absolute path of the file: newline-delimited JSON objects, one row per line. */
  readonly path: string;
}

/** Where and how much. */
export interface SpoolOptions extends RowsOptions {
  readonly spoolDir: string;
  /** Largest body accepted; more is 413. */
  readonly maxBytes: number;
}

/**
 * Streams a JSON body of rows to a new file in the spool directory, through
 * {@link JsonRows}. The file is removed again when anything fails; on success the caller
 * owns it and removes it with {@link discard}.
 */
export async function spoolJsonRows(
  body: ReadableStream<Uint8Array> | null,
  declaredLength: string | undefined,
  options: SpoolOptions,
): Promise<SpooledRows> {
  if (declaredLength !== undefined && Number(declaredLength) > options.maxBytes) {
    await body?.cancel().catch(() => {});
    throw ApiError.tooLarge(options.maxBytes);
  }
  const path = `${options.spoolDir}/${crypto.randomUUID()}.json`;
  const file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
  const buffer = new Uint8Array(WRITE_BUFFER_BYTES);
  let buffered = 0;
  const pending: Uint8Array[] = [];
  const pass = new JsonRows(options, (bytes) => {
    if (bytes.length === 0) return;
    if (buffered + bytes.length <= buffer.length) {
      buffer.set(bytes, buffered);
      buffered += bytes.length;
    } else {
      pending.push(buffer.slice(0, buffered), bytes.slice());
      buffered = 0;
    }
  });
  const flush = async () => {
    for (const part of pending.splice(0)) await writeAll(file, part);
  };
  let received = 0;
  try {
    if (body) {
      const reader = body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          received += value.length;
          if (received > options.maxBytes) throw ApiError.tooLarge(options.maxBytes);
          pass.push(value);
          if (pending.length > 0) await flush();
        }
      } catch (error) {
        await reader.cancel().catch(() => {});
        throw error;
      }
    }
    const summary = pass.finish();
    await flush();
    await writeAll(file, buffer.subarray(0, buffered));
    file.close();
    return { ...summary, path };
  } catch (error) {
    try {
      file.close();
    } catch {
      // Already closed.
    }
    await Deno.remove(path).catch(() => {});
    throw error;
  }
}

/** Removes a spooled file; never fails. */
export async function discard(file: { readonly path: string }): Promise<void> {
  await Deno.remove(file.path).catch(() => {});
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await file.write(bytes.subarray(written));
}
