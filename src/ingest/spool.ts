/**
 * Request bodies to files of rows: streamed to the spool directory, never held whole, and
 * offered to the store both as files and as streams.
 *
 * @module
 */

import { beforeDeadline } from "../deadline.ts";
import { ApiError } from "../errors.ts";
import { JsonRows } from "./json_rows.ts";
import type { RowsOptions, RowsSummary } from "./json_rows_summary.ts";

/** Bytes gathered before one write to the spool file. */
const WRITE_BUFFER_BYTES = 1 << 20;
/** Where the write buffer starts when the body's length is not declared. */
const FIRST_BUFFER_BYTES = 1 << 16;

const LF = 0x0a;

/**
 * A spooled file's bytes as a source of rows: read as a stream, or in place (`localFile`,
 * its path) by whoever reads files itself.
 */
export interface LocalBytes {
  readonly localFile: string;
  /** The file's bytes from their start, in a new stream at each call; opened when read. */
  stream(): ReadableStream<Uint8Array>;
}

/**
 * The bytes of the file at `path` as a {@link LocalBytes}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { localBytes } from "./spool.ts";
 *
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "[1]\n");
 * const bytes = localBytes(path);
 * assert.equal(bytes.localFile, path);
 * assert.equal(await new Response(bytes.stream()).text(), "[1]\n");
 * assert.equal(await new Response(bytes.stream()).text(), "[1]\n");
 * await Deno.remove(path);
 * ```
 */
export function localBytes(path: string): LocalBytes {
  return { localFile: path, stream: () => fileStream(path) };
}

/** A stream of a file's bytes that opens the file only when first read. */
function fileStream(path: string): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      reader ??= (await Deno.open(path)).readable.getReader();
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader?.cancel(reason),
  }, { highWaterMark: 0 });
}

/** A spooled rows array and what the pass learned about it. */
export interface SpooledRows extends RowsSummary, LocalBytes {
  /** Absolute path of the file: newline-delimited JSON objects, one row per line. */
  readonly path: string;
}

/** A closed part of a body being spooled: a file of whole rows. */
export interface SpooledPart extends LocalBytes {
  /** Absolute path of the part: newline-delimited JSON objects, one row per line. */
  readonly path: string;
  /** What the pass knew when the part closed; for the last part, the whole summary. */
  readonly progress: RowsSummary;
  /** Whether the body ended with this part. */
  readonly last: boolean;
}

/** A body small enough to have stayed in memory, and what the pass learned about it. */
export interface RowsInMemory extends RowsSummary {
  /** Newline-delimited JSON objects, one row per line. */
  readonly bytes: Uint8Array;
}

/** Where a request body goes, how much of it is accepted, and who hears how much came. */
export interface BodyOptions extends BodyLimits {
  readonly spoolDir: string;
}

/** How much of a request body is accepted, how long its pauses may be, who hears it come. */
export interface BodyLimits {
  /** Largest body accepted; more is 413. */
  readonly maxBytes: number;
  /** Longest wait for the body's next bytes; longer is 408. */
  readonly idleMs: number;
  /** Told the size of each chunk of the body as it is read. */
  readonly onBytes?: (bytes: number) => void;
  /** Fed the body's bytes as they are read (see {@link BodyDigest}). */
  readonly digest?: BodyDigest;
}

/**
 * A running hash of what a request sent, fed while its body streams by, so it is never
 * held whole. A multipart body feeds its parts' names and contents, not its boundaries,
 * which clients draw anew for each request.
 */
export interface BodyDigest {
  update(bytes: Uint8Array): void;
}

/** Where and how much, and how the rows are checked on their way. */
export interface SpoolOptions extends RowsOptions, BodyOptions {}

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
  const { paths, ...summary } = await spoolInParts(body, declaredLength, options, Infinity, false);
  return { ...summary, path: paths[0]!, ...localBytes(paths[0]!) };
}

/**
 * A body being spooled in parts of about `partBytes`, each cut after a whole row, so rows
 * can be loaded while the rest of the body still arrives. {@link RowsInParts.parts} yields
 * the parts as they close; {@link RowsInParts.whole} gives the body as one file once all of
 * it has arrived. All throw what the spool throws (400 malformed, 413 too large).
 *
 * A body that fits in the write buffer is never written unless asked for as a file: most
 * bodies are a few rows, and {@link RowsInParts.inMemory} spares them the file system.
 */
export class RowsInParts {
  readonly #parts: SpooledPart[] = [];
  readonly #done: Promise<Spooled>;
  #settled = false;
  #wake: (() => void) | undefined;
  #whole: Promise<SpooledRows> | undefined;

  constructor(
    body: ReadableStream<Uint8Array> | null,
    declaredLength: string | undefined,
    private readonly options: SpoolOptions & { readonly partBytes: number },
  ) {
    this.#done = spoolInParts(body, declaredLength, options, options.partBytes, true, (part) => {
      this.#parts.push(part);
      this.#wake?.();
    });
    const settle = () => {
      this.#settled = true;
      this.#wake?.();
    };
    this.#done.then(settle, settle);
  }

  /** The parts in order, each as soon as it is closed. */
  async *parts(): AsyncGenerator<SpooledPart> {
    for (let i = 0;;) {
      if (i < this.#parts.length) yield this.#parts[i++]!;
      else if (this.#settled) {
        await this.#done;
        return;
      } else await new Promise<void>((resolve) => this.#wake = resolve);
    }
  }

  /** The whole body, once it has arrived, when it stayed in memory; otherwise undefined. */
  async inMemory(): Promise<RowsInMemory | undefined> {
    const { paths: _, bytes, ...summary } = await this.#done;
    return bytes && { ...summary, bytes };
  }

  /** The whole body as one file (the parts joined), once all of it has arrived. */
  whole(): Promise<SpooledRows> {
    this.#whole ??= this.#done.then(async ({ paths, bytes, ...summary }) => {
      if (paths.length === 1) return { ...summary, path: paths[0]!, ...localBytes(paths[0]!) };
      const path = `${this.options.spoolDir}/${crypto.randomUUID()}.json`;
      if (bytes) {
        try {
          await Deno.writeFile(path, bytes, { createNew: true, mode: 0o600 });
        } catch (error) {
          // A full disk leaves the file created, and part written.
          await discard({ path });
          throw error;
        }
        return { ...summary, path, ...localBytes(path) };
      }
      const file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
      try {
        for (const part of paths) {
          await (await Deno.open(part)).readable.pipeTo(file.writable, { preventClose: true });
        }
      } catch (error) {
        await discard({ path });
        throw error;
      } finally {
        file.close();
      }
      return { ...summary, path, ...localBytes(path) };
    });
    return this.#whole;
  }

  /** Removes every file of the body once the spool has stopped; never fails. */
  async discard(): Promise<void> {
    const spooled = await this.#done.catch(() => undefined);
    const whole = await this.#whole?.catch(() => undefined);
    for (const path of [...spooled?.paths ?? [], ...whole ? [whole.path] : []]) {
      await discard({ path });
    }
  }
}

/** What the spool made of a body: files, or with none the bytes it kept in memory. */
type Spooled = RowsSummary & {
  readonly paths: readonly string[];
  readonly bytes?: Uint8Array;
};

/**
 * The spool itself: parts of about `partBytes`, each ending after a whole row. With
 * `keepSmall` a body that fits in the write buffer is kept in memory, in no file and no part.
 */
async function spoolInParts(
  body: ReadableStream<Uint8Array> | null,
  declaredLength: string | undefined,
  options: SpoolOptions,
  partBytes: number,
  keepSmall: boolean,
  onPart?: (part: SpooledPart) => void,
): Promise<Spooled> {
  if (declaredLength !== undefined && Number(declaredLength) > options.maxBytes) {
    await body?.cancel().catch(() => {});
    throw ApiError.tooLarge(options.maxBytes);
  }
  const paths: string[] = [];
  let file: Deno.FsFile | undefined;
  let written = 0;
  const openPart = async () => {
    const path = `${options.spoolDir}/${crypto.randomUUID()}.json`;
    paths.push(path);
    file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
    written = 0;
  };
  const write = async (bytes: Uint8Array) => {
    if (!file) await openPart();
    await writeAll(file!, bytes);
    written += bytes.length;
  };
  // The buffer starts at the declared length and grows up to its cap: a fresh megabyte for
  // every small request is allocation and garbage collection that the request never uses.
  const cap = Math.min(WRITE_BUFFER_BYTES, partBytes);
  const declared = Number(declaredLength);
  let buffer = new Uint8Array(
    Math.min(cap, Number.isSafeInteger(declared) && declared > 0 ? declared : FIRST_BUFFER_BYTES),
  );
  let buffered = 0;
  const pending: Uint8Array[] = [];
  // A full buffer is written as it is while another one fills, and the two take turns: a
  // copy of each into a new one cost more in page faults than the copying itself. The one
  // set aside is free again once the writes pending then are done (flush).
  let setAside: typeof buffer | undefined;
  let spare: typeof buffer | undefined;
  const pass = new JsonRows(options, (bytes) => {
    if (bytes.length === 0) return;
    const needed = buffered + bytes.length;
    if (needed > buffer.length && needed <= cap) {
      const grown = new Uint8Array(Math.min(cap, Math.max(needed, buffer.length * 2)));
      grown.set(buffer.subarray(0, buffered));
      buffer = grown;
    }
    if (needed <= buffer.length) {
      buffer.set(bytes, buffered);
      buffered += bytes.length;
      return;
    }
    pending.push(buffer.subarray(0, buffered));
    setAside = buffer;
    buffer = spare ?? new Uint8Array(cap);
    spare = undefined;
    buffered = 0;
    if (bytes.length <= buffer.length) {
      buffer.set(bytes);
      buffered = bytes.length;
    } else pending.push(bytes.slice());
  });
  /** Writes the pending chunks, cutting a part after the last row break when `cut` allows. */
  const flush = async (cut = true) => {
    const chunks = pending.splice(0);
    if (cut && written + chunks.reduce((n, c) => n + c.length, 0) >= partBytes) {
      // Cut after the last row break in hand: line breaks in the copy only separate rows.
      for (let k = chunks.length - 1; k >= 0; k--) {
        const at = chunks[k]!.lastIndexOf(LF);
        if (at < 0) continue;
        for (const chunk of chunks.slice(0, k)) await write(chunk);
        await write(chunks[k]!.subarray(0, at + 1));
        file!.close();
        onPart?.({ ...part(paths.at(-1)!), progress: pass.progress(), last: false });
        await openPart();
        chunks.splice(0, k + 1, chunks[k]!.subarray(at + 1));
        break;
      }
    }
    for (const chunk of chunks) await write(chunk);
    if (setAside?.length === cap) spare = setAside;
    setAside = undefined;
  };
  try {
    await readBody(body, options, async (chunk) => {
      pass.push(chunk);
      if (pending.length > 0) await flush();
    });
    const summary = pass.finish();
    // No cut at the end: the rows end with a line break, and the part after it would be empty.
    await flush(false);
    if (keepSmall && !file) return { ...summary, paths, bytes: buffer.slice(0, buffered) };
    await write(buffer.subarray(0, buffered));
    file!.close();
    onPart?.({ ...part(paths.at(-1)!), progress: summary, last: true });
    return { ...summary, paths };
  } catch (error) {
    try {
      file?.close();
    } catch {
      // Already closed.
    }
    for (const path of paths) await discard({ path });
    throw error;
  }
}

/** The file of a part at `path`. */
function part(path: string): { readonly path: string } & LocalBytes {
  return { path, ...localBytes(path) };
}

/** Removes a spooled file; never fails. */
export async function discard(file: { readonly path: string }): Promise<void> {
  await Deno.remove(file.path).catch(() => {});
}

/**
 * Hands a request body to `take` chunk by chunk, waiting for each; 413 once more than
 * `maxBytes` have come, 408 when nothing comes for `idleMs`, {@link ApiError.clientClosed}
 * when the connection closes, 400 when the body's framing is broken.
 * A client stalling mid-body would otherwise hold what its request holds by then (a load's
 * transaction and table locks) for as long as it keeps the connection open. The body is
 * cancelled when anything fails.
 */
export async function readBody(
  body: ReadableStream<Uint8Array> | null,
  { maxBytes, idleMs, onBytes, digest }: BodyLimits,
  take: (chunk: Uint8Array) => void | Promise<void>,
): Promise<void> {
  if (!body) return;
  const reader = body.getReader();
  let received = 0;
  try {
    for (;;) {
      // The body's stream fails only when the connection does: a hang-up or broken framing.
      const read = reader.read().catch((error) => Promise.reject(ApiError.unreadableBody(error)));
      const { done, value } = await beforeDeadline(
        read,
        idleMs,
        () => ApiError.bodyTimeout(idleMs),
      );
      if (done) return;
      received += value.length;
      onBytes?.(value.length);
      if (received > maxBytes) throw ApiError.tooLarge(maxBytes);
      digest?.update(value);
      await take(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
}

/**
 * A body read whole into memory by {@link readBody}, under the same limits and idle wait, in
 * bytes of its own (their `buffer` is exactly the body); a declared length over `maxBytes` is
 * 413 before anything is read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readWholeBody } from "./spool.ts";
 *
 * const body = new Blob(["[1,", "2]"]).stream();
 * const bytes = await readWholeBody(body, undefined, { maxBytes: 10, idleMs: 1000 });
 * assert.equal(new TextDecoder().decode(bytes), "[1,2]");
 * await assert.rejects(readWholeBody(new Blob(["{}"]).stream(), "20", { maxBytes: 10, idleMs: 1000 }));
 * ```
 */
export async function readWholeBody(
  body: ReadableStream<Uint8Array> | null,
  declaredLength: string | undefined,
  limits: BodyLimits,
): Promise<Uint8Array> {
  if (declaredLength !== undefined && Number(declaredLength) > limits.maxBytes) {
    await body?.cancel().catch(() => {});
    throw ApiError.tooLarge(limits.maxBytes);
  }
  const chunks: Uint8Array[] = [];
  let length = 0;
  await readBody(body, limits, (chunk) => {
    chunks.push(chunk);
    length += chunk.length;
  });
  // Copied even when one chunk: that may be a view of a larger buffer.
  const whole = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.length;
  }
  return whole;
}

/** Writes all of `bytes`, however many writes that takes. */
export async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await file.write(bytes.subarray(written));
}
