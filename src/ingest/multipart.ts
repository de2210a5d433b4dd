/**
 * A `multipart/form-data` upload streamed apart: the `file` part to a spool file as it
 * arrives, the small `body` part to text. Nothing is held whole in memory.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import {
  type BodyDigest,
  type BodyLimits,
  type BodyOptions,
  discard,
  type LocalBytes,
  localBytes,
  readBody,
  writeAll,
} from "./spool.ts";

const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;

/** Bytes gathered before one write to the spool file. */
const WRITE_BUFFER_BYTES = 1 << 20;

/** Most bytes of one part's headers. */
const MAX_HEADER_BYTES = 16 * 1024;

/** What an upload brought. */
export interface MultipartUpload {
  /** The `file` part, spooled; the caller removes it with {@link discard}. */
  readonly file: SpooledFile;
  /** The `body` part's text, if there was one. */
  readonly body?: string;
}

/** The `file` part of an upload, spooled. */
export interface SpooledFile extends LocalBytes {
  readonly path: string;
  readonly bytes: number;
  readonly filename?: string;
  /**
   * Whether some line of the file holds nothing but separators (`,;|`, tabs, spaces): read
   * as CSV, possibly a line of empty fields, which is no record. False when no line does,
   * so a loader need not look for such lines.
   */
  readonly separatorLines: boolean;
}

/**
 * Bytes of a line that is no more than separators: the delimiters DuckDB's sniffer tries,
 * tab, space and the carriage return of a CRLF.
 */
const SEPARATORS = new Set([0x2c, 0x3b, 0x7c, 0x09, 0x20, CR]);

/** Finds, chunk by chunk, whether a file has a line of nothing but {@link SEPARATORS}. */
class SeparatorLines {
  /** Whether a whole line of separators has been seen. */
  found = false;
  /** Whether the line under way is, so far, separators only (or nothing). */
  #only = true;
  /** Whether the line under way has any bytes. */
  #begun = false;

  push(bytes: Uint8Array): void {
    let start = 0;
    // Each line is looked at up to its first other byte: for most lines, its first.
    while (!this.found && start < bytes.length) {
      const lf = bytes.indexOf(LF, start);
      const end = lf < 0 ? bytes.length : lf;
      for (let i = start; this.#only && i < end; i++) this.#only = SEPARATORS.has(bytes[i]!);
      if (end > start) this.#begun = true;
      if (lf < 0) return;
      if (this.#only) this.found = true;
      this.#only = true;
      this.#begun = false;
      start = lf + 1;
    }
  }

  /** Whether the file, now ended, has such a line (its last one may lack a line break). */
  finish(): boolean {
    return this.found || (this.#begun && this.#only);
  }
}

/** Where and how much. */
export interface MultipartOptions extends BodyOptions {
  /** Largest `body` part; more is 413. */
  readonly maxBodyPartBytes: number;
}

/** The boundary of a `multipart/form-data` content type; 415 for any other type. */
export function multipartBoundary(contentType: string | undefined): string {
  const type = contentType ?? "";
  if (!/^multipart\/form-data\s*(;|$)/i.test(type)) {
    throw ApiError.unsupportedMediaType(
      "The request body must be multipart/form-data with a part named file",
    );
  }
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;,"]{1,70}))/i.exec(type);
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary) throw ApiError.badRequest("The multipart content type has no valid boundary");
  return boundary;
}

/**
 * Streams a multipart body apart: the part named `file` to a new file in the spool
 * directory, the part named `body` to text; other parts are read past. 400 when the body is
 * not well-formed multipart or has no `file` part, 413 past the limits. The spooled file is
 * removed again when anything fails.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { spoolMultipart } from "./multipart.ts";
 *
 * const dir = await Deno.makeTempDir();
 * const form = new FormData();
 * form.append("body", '{"table": null}');
 * form.append("file", new File(["a,b\n1,2\n"], "t.csv"));
 * const request = new Request("http://x/", { method: "POST", body: form });
 * const upload = await spoolMultipart(request.body, request.headers.get("content-type")!, {
 *   spoolDir: dir,
 *   maxBytes: 1 << 20,
 *   idleMs: 30_000,
 *   maxBodyPartBytes: 1 << 10,
 * });
 * assert.equal(upload.body, '{"table": null}');
 * assert.equal(upload.file.filename, "t.csv");
 * assert.equal(await Deno.readTextFile(upload.file.path), "a,b\n1,2\n");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function spoolMultipart(
  body: ReadableStream<Uint8Array> | null,
  contentType: string | undefined,
  options: MultipartOptions,
): Promise<MultipartUpload> {
  const boundary = multipartBoundary(contentType);
  const parser = new MultipartParser(boundary, options);
  try {
    // The parser feeds the digest what the parts hold; the raw bytes carry the boundary.
    await readBody(body, { ...options, digest: undefined }, (chunk) => parser.push(chunk));
    return parser.finish();
  } catch (error) {
    await parser.abort();
    throw error;
  }
}

/**
 * Reads a multipart body only to feed `options.digest` what its parts hold, as
 * {@link spoolMultipart} feeds it, and keeps nothing: the fingerprint of a retried upload
 * needs no second copy of its file (nor the disk space for one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { digestMultipart, spoolMultipart } from "./multipart.ts";
 *
 * const hashes: string[] = [];
 * for (const keep of [true, false]) {
 *   const seen: number[] = [];
 *   const form = new FormData();
 *   form.append("file", new File(["a,b\n1,2\n"], "t.csv"));
 *   const request = new Request("http://x/", { method: "POST", body: form });
 *   const options = { maxBytes: 1 << 20, idleMs: 30_000, digest: { update: (b: Uint8Array) => { seen.push(...b); } } };
 *   const type = request.headers.get("content-type")!;
 *   if (keep) {
 *     const dir = await Deno.makeTempDir();
 *     await spoolMultipart(request.body, type, { ...options, spoolDir: dir, maxBodyPartBytes: 1024 });
 *     await Deno.remove(dir, { recursive: true });
 *   } else await digestMultipart(request.body, type, options);
 *   hashes.push(seen.join(","));
 * }
 * assert.equal(hashes[0], hashes[1]);
 * ```
 */
export async function digestMultipart(
  body: ReadableStream<Uint8Array> | null,
  contentType: string | undefined,
  options: BodyLimits & { readonly digest: BodyDigest },
): Promise<void> {
  const parser = new MultipartParser(
    multipartBoundary(contentType),
    { ...options, spoolDir: "", maxBodyPartBytes: Infinity },
    false,
  );
  await readBody(body, { ...options, digest: undefined }, (chunk) => parser.push(chunk));
}

/** Where the parser is. */
type Place = "preamble" | "afterBoundary" | "headers" | "data" | "epilogue";

/** Where the current part's data goes. */
type Sink =
  | {
    readonly kind: "file";
    readonly file: Deno.FsFile;
    readonly path: string;
    bytes: number;
    readonly buffer: Uint8Array;
    buffered: number;
    readonly lines: SeparatorLines;
  }
  | { readonly kind: "text"; readonly parts: Uint8Array[]; bytes: number }
  | { readonly kind: "skip" };

class MultipartParser {
  /** "\r\n--boundary": what ends a part's data. */
  readonly #delimiter: Uint8Array;
  #place: Place = "preamble";
  /** Bytes not yet consumed: at most a delimiter's length plus one chunk. */
  #pending: Uint8Array = new Uint8Array(0);
  #sink: Sink = { kind: "skip" };
  #file?: SpooledFile;
  #body?: string;
  #spooled: string[] = [];
  #started = false;

  /**
   * `keep` false: the parts are only fed to the digest, never written or gathered.
   */
  constructor(
    boundary: string,
    private readonly options: MultipartOptions,
    private readonly keep = true,
  ) {
    this.#delimiter = new TextEncoder().encode(`\r\n--${boundary}`);
  }

  async push(chunk: Uint8Array): Promise<void> {
    let data = this.#pending.length === 0 ? chunk : concat(this.#pending, chunk);
    // The preamble is read as if it followed a line break, so a body that opens with the
    // boundary (the usual case) needs no special start.
    if (!this.#started) {
      this.#started = true;
      data = concat(CRLF, data);
    }
    this.#pending = new Uint8Array(0);
    let at = 0;
    for (;;) {
      if (this.#place === "preamble" || this.#place === "data") {
        const found = indexOfBytes(data, this.#delimiter, at);
        if (found < 0) {
          // Keep what could be the start of a delimiter for the next chunk.
          // Only bytes from a CR on can start a delimiter; usually there is none to keep.
          const window = Math.max(at, data.length - (this.#delimiter.length - 1));
          const cr = data.indexOf(CR, window);
          const keep = cr < 0 ? 0 : data.length - cr;
          await this.#write(data.subarray(at, data.length - keep));
          this.#pending = data.slice(data.length - keep);
          return;
        }
        await this.#write(data.subarray(at, found));
        await this.#endPart();
        at = found + this.#delimiter.length;
        this.#place = "afterBoundary";
        continue;
      }
      if (this.#place === "afterBoundary") {
        // "--" ends the body; otherwise optional spaces, then CRLF and the next part's headers.
        if (data.length - at < 2) return this.#hold(data, at);
        if (data[at] === DASH && data[at + 1] === DASH) {
          this.#place = "epilogue";
          return;
        }
        const end = indexOfBytes(data, CRLF, at);
        if (end < 0) {
          if (data.length - at > 256) throw malformed("no line break after a boundary");
          return this.#hold(data, at);
        }
        if (!/^[ \t]*$/.test(new TextDecoder().decode(data.subarray(at, end)))) {
          throw malformed("text after a boundary");
        }
        at = end + 2;
        this.#place = "headers";
        continue;
      }
      if (this.#place === "headers") {
        const end = indexOfBytes(data, CRLF_CRLF, at);
        const blank = data[at] === CR && data[at + 1] === LF;
        if (end < 0 && !blank) {
          if (data.length - at > MAX_HEADER_BYTES) throw malformed("part headers are too long");
          return this.#hold(data, at);
        }
        const headerEnd = blank ? at : end;
        await this.#startPart(new TextDecoder().decode(data.subarray(at, headerEnd)));
        at = headerEnd + (blank ? 2 : 4);
        this.#place = "data";
        continue;
      }
      return; // The epilogue is ignored.
    }
  }

  finish(): MultipartUpload {
    if (this.#place !== "epilogue") throw malformed("the body ends before its closing boundary");
    if (!this.#file) {
      throw ApiError.badRequest("The multipart body has no part named file");
    }
    return { file: this.#file, ...(this.#body === undefined ? {} : { body: this.#body }) };
  }

  /** Closes and removes anything spooled. */
  async abort(): Promise<void> {
    if (this.#sink.kind === "file") {
      try {
        this.#sink.file.close();
      } catch {
        // Already closed.
      }
    }
    for (const path of this.#spooled) await discard({ path });
  }

  #hold(data: Uint8Array, at: number): void {
    this.#pending = data.slice(at);
  }

  async #startPart(headerText: string): Promise<void> {
    const headers = new Map<string, string>();
    for (const line of headerText.split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon <= 0) throw malformed("a part header without a name");
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const disposition = headers.get("content-disposition") ?? "";
    if (!/^form-data\s*(;|$)/i.test(disposition)) {
      throw malformed("a part without Content-Disposition: form-data");
    }
    const name = parameter(disposition, "name");
    const filename = parameter(disposition, "filename");
    this.options.digest?.update(
      new TextEncoder().encode(`\u0000part\u0000${name ?? ""}\u0000${filename ?? ""}\u0000`),
    );
    if (!this.keep) this.#sink = { kind: "skip" };
    else if (name === "file") {
      if (this.#file) throw ApiError.badRequest("The multipart body has more than one file part");
      const path = `${this.options.spoolDir}/${crypto.randomUUID()}.upload`;
      this.#spooled.push(path);
      const file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
      this.#file = {
        path,
        ...localBytes(path),
        bytes: 0,
        separatorLines: false,
        ...(filename === undefined ? {} : { filename }),
      };
      this.#sink = {
        kind: "file",
        file,
        path,
        bytes: 0,
        buffer: new Uint8Array(WRITE_BUFFER_BYTES),
        buffered: 0,
        lines: new SeparatorLines(),
      };
    } else if (name === "body") {
      if (this.#body !== undefined) {
        throw ApiError.badRequest("The multipart body has more than one body part");
      }
      this.#sink = { kind: "text", parts: [], bytes: 0 };
    } else this.#sink = { kind: "skip" };
  }

  async #write(bytes: Uint8Array): Promise<void> {
    if (bytes.length === 0) return;
    // The preamble is no part's content.
    if (this.#place === "data") this.options.digest?.update(bytes);
    const sink = this.#sink;
    if (sink.kind === "file") {
      sink.lines.push(bytes);
      // Gathered into larger writes: a write per network chunk costs more than the copy.
      if (sink.buffered + bytes.length > sink.buffer.length) await flush(sink);
      if (bytes.length >= sink.buffer.length) await writeAll(sink.file, bytes);
      else {
        sink.buffer.set(bytes, sink.buffered);
        sink.buffered += bytes.length;
      }
      sink.bytes += bytes.length;
    } else if (sink.kind === "text") {
      sink.bytes += bytes.length;
      if (sink.bytes > this.options.maxBodyPartBytes) {
        throw new ApiError(
          413,
          "payload_too_large",
          `The body part is larger than ${this.options.maxBodyPartBytes} bytes`,
        );
      }
      sink.parts.push(bytes.slice());
    }
  }

  async #endPart(): Promise<void> {
    const sink = this.#sink;
    if (sink.kind === "file") {
      await flush(sink);
      sink.file.close();
      this.#file = { ...this.#file!, bytes: sink.bytes, separatorLines: sink.lines.finish() };
    } else if (sink.kind === "text") {
      const all = sink.parts.reduce((a, b) => concat(a, b), new Uint8Array(0));
      try {
        this.#body = new TextDecoder("utf-8", { fatal: true }).decode(all);
      } catch {
        throw ApiError.badRequest("The body part is not UTF-8 text");
      }
    }
    this.#sink = { kind: "skip" };
  }
}

const CRLF = new Uint8Array([CR, LF]);
const CRLF_CRLF = new Uint8Array([CR, LF, CR, LF]);

async function flush(sink: { file: Deno.FsFile; buffer: Uint8Array; buffered: number }) {
  await writeAll(sink.file, sink.buffer.subarray(0, sink.buffered));
  sink.buffered = 0;
}

function malformed(why: string): ApiError {
  return ApiError.badRequest(`The multipart body is malformed: ${why}`);
}

/** A parameter of a header value such as `form-data; name="file"; filename="a.xlsx"`. */
function parameter(value: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, "i")
    .exec(value);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : match[2];
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** First index of `needle` in `haystack` at or after `from`, or -1. */
function indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  const last = haystack.length - needle.length;
  for (
    let i = haystack.indexOf(first, from);
    i >= 0 && i <= last;
    i = haystack.indexOf(first, i + 1)
  ) {
    let k = 1;
    while (k < needle.length && haystack[i + k] === needle[k]) k++;
    if (k === needle.length) return i;
  }
  return -1;
}
