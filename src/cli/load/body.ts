/**
 * The request body of an upload: the file's bytes, streamed from disk or standard input,
 * inside the framing its endpoint takes (multipart, or a JSON envelope).
 *
 * @module
 */

import { basename } from "node:path";
import { EXTENSIONS, type LoadOptions, STDIN } from "./args.ts";
import { LoadError } from "./error.ts";

/** What goes around the file's bytes in a request body. */
export interface Framing {
  /** The body's content type. */
  readonly contentType: string;
  /** Bytes before the file. */
  readonly head: Uint8Array;
  /** Bytes after the file. */
  readonly tail: Uint8Array;
  /** Leading bytes of the file to leave out (a byte order mark). */
  readonly skip: number;
}

/**
 * The multipart framing of a file upload: an optional `body` part (`definition`, JSON
 * text), then the `file` part's headers before the file and the closing boundary after it.
 * The body's length is `head.length + fileBytes + tail.length`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { multipartFraming } from "./body.ts";
 *
 * const framing = multipartFraming("XyZ", "a.csv", "text/csv");
 * assert.equal(framing.contentType, "multipart/form-data; boundary=XyZ");
 * assert.equal(
 *   new TextDecoder().decode(framing.head),
 *   '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n' +
 *     "Content-Type: text/csv\r\n\r\n",
 * );
 * assert.equal(new TextDecoder().decode(framing.tail), "\r\n--XyZ--\r\n");
 * ```
 */
export function multipartFraming(
  boundary: string,
  filename: string,
  fileType: string,
  definition?: string,
): Framing {
  // Quotes and line breaks in a file name are percent-encoded, as browsers do.
  const quoted = filename.replaceAll('"', "%22").replaceAll("\r", "%0D").replaceAll("\n", "%0A");
  const body = definition === undefined ? "" : `--${boundary}\r\n` +
    'Content-Disposition: form-data; name="body"\r\n' +
    `Content-Type: application/json\r\n\r\n${definition}\r\n`;
  const encoder = new TextEncoder();
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    head: encoder.encode(
      `${body}--${boundary}\r\n` +
        `Content-Disposition: form-data; name="file"; filename="${quoted}"\r\n` +
        `Content-Type: ${fileType}\r\n\r\n`,
    ),
    tail: encoder.encode(`\r\n--${boundary}--\r\n`),
    skip: 0,
  };
}

/**
 * The framing of a `.json` file from its first bytes: an envelope object is sent as it is;
 * a top-level array is wrapped as `{"data": …}` (`{"table": definition, "data": …}` with a
 * definition). A byte order mark is left out. Throws a {@link LoadError} for a definition
 * next to an envelope, which has its own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonFraming } from "./body.ts";
 *
 * const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
 * const array = jsonFraming(new TextEncoder().encode('  [{"id": 1}]'));
 * assert.equal(text(array.head), '{"data":');
 * assert.equal(text(array.tail), "}");
 * const envelope = jsonFraming(new TextEncoder().encode('{"data": []}'));
 * assert.equal(envelope.head.length + envelope.tail.length, 0);
 * ```
 */
export function jsonFraming(leading: Uint8Array, definition?: string): Framing {
  const bom = leading[0] === 0xef && leading[1] === 0xbb && leading[2] === 0xbf ? 3 : 0;
  let at = bom;
  while (at < leading.length && [0x20, 0x09, 0x0a, 0x0d].includes(leading[at]!)) at++;
  const encoder = new TextEncoder();
  const contentType = "application/json";
  if (leading[at] === 0x5b /* [ */) {
    const table = definition === undefined ? "" : `"table":${definition},`;
    return {
      contentType,
      head: encoder.encode(`{${table}"data":`),
      tail: encoder.encode("}"),
      skip: bom,
    };
  }
  if (definition !== undefined) {
    throw new LoadError(
      "--definition applies to a JSON file that holds an array of rows; " +
        'this file is an upload envelope: put the definition in its "table" key',
    );
  }
  return { contentType, head: new Uint8Array(0), tail: new Uint8Array(0), skip: bom };
}

/**
 * The bytes of a request body: `framing.head`, then `bytes` bytes of `file` from its
 * current position, then `framing.tail`. The file is closed when the stream ends or is
 * cancelled; a file that grows or shrinks meanwhile errors the stream, since the length
 * was announced. With `bytes` undefined (standard input) the file is sent to its end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bodyStream, multipartFraming } from "./body.ts";
 *
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "a,b\n1,2\n");
 * const framing = multipartFraming("b0undary", "t.csv", "text/csv");
 * const body = bodyStream(await Deno.open(path), 8, framing);
 * const form = await new Request("http://x/", {
 *   method: "POST",
 *   body,
 *   headers: { "content-type": framing.contentType },
 * }).formData();
 * assert.equal(await (form.get("file") as File).text(), "a,b\n1,2\n");
 * await Deno.remove(path);
 * ```
 */
export function bodyStream(
  file: { readonly readable: ReadableStream<Uint8Array> },
  bytes: number | undefined,
  framing: Framing,
): ReadableStream<Uint8Array> {
  async function* chunks(): AsyncGenerator<Uint8Array> {
    if (framing.head.length > 0) yield framing.head;
    let left = bytes ?? Infinity;
    // file.readable closes the file when it ends or when this generator is returned early.
    for await (const chunk of file.readable) {
      if (chunk.length > left) throw new LoadError("The file grew while it was being sent");
      left -= chunk.length;
      yield chunk;
    }
    if (left > 0 && left !== Infinity) {
      throw new LoadError("The file shrank while it was being sent");
    }
    if (framing.tail.length > 0) yield framing.tail;
  }
  return ReadableStream.from(chunks());
}

/** Reads up to `bytes` bytes from the start of `file`; the caller seeks where it needs. */
async function readStart(
  file: { read(p: Uint8Array): Promise<number | null> },
  bytes: number,
): Promise<Uint8Array> {
  const buffer = new Uint8Array(bytes);
  let filled = 0;
  while (filled < bytes) {
    const n = await file.read(buffer.subarray(filled));
    if (n === null) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

/** The `--definition` file as JSON text of the definition itself. */
async function readDefinition(path: string): Promise<string> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new LoadError(`Cannot read --definition "${path}": ${describeFileError(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new LoadError(
      `--definition "${path}" is not JSON: ${error instanceof Error ? error.message : error}`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new LoadError(
      `--definition "${path}" must hold a JSON object: {"table": definition} or a definition`,
    );
  }
  return JSON.stringify("table" in value ? value.table : value);
}

function describeFileError(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  return error instanceof Error ? error.message : String(error);
}

/**
 * The request body for `options.file`, with its content type and its length (undefined for
 * standard input, whose length is known only at its end).
 */
export async function prepareBody(
  options: LoadOptions,
): Promise<
  { contentType: string; length: number | undefined; body: ReadableStream<Uint8Array> }
> {
  const definition = options.definition === undefined
    ? undefined
    : await readDefinition(options.definition);
  if (options.file === STDIN) return stdinBody(options, definition);
  let file: Deno.FsFile;
  let size: number;
  try {
    const info = await Deno.stat(options.file);
    if (info.isDirectory) throw new Deno.errors.IsADirectory();
    size = info.size;
    file = await Deno.open(options.file);
  } catch (error) {
    throw new LoadError(`Cannot read "${options.file}": ${describeFileError(error)}`);
  }
  try {
    let framing: Framing;
    if (options.kind === "json") {
      framing = jsonFraming(await readStart(file, 64 * 1024), definition);
      await file.seek(framing.skip, Deno.SeekMode.Start);
    } else framing = partFraming(options, basename(options.file), definition);
    const fileBytes = size - framing.skip;
    return {
      contentType: framing.contentType,
      length: framing.head.length + fileBytes + framing.tail.length,
      body: bodyStream(file, fileBytes, framing),
    };
  } catch (error) {
    file.close();
    throw error;
  }
}

/** Standard input as a body: its first bytes read ahead to frame JSON, then the rest. */
async function stdinBody(
  options: LoadOptions,
  definition: string | undefined,
): Promise<{ contentType: string; length: undefined; body: ReadableStream<Uint8Array> }> {
  let framing: Framing;
  let leading: Uint8Array = new Uint8Array(0);
  if (options.kind === "json") {
    leading = await readStart(Deno.stdin, 64 * 1024);
    framing = jsonFraming(leading, definition);
  } else framing = partFraming(options, `stdin${options.extension}`, definition);
  const rest = Deno.stdin.readable;
  async function* input(): AsyncGenerator<Uint8Array> {
    if (leading.length > framing.skip) yield leading.subarray(framing.skip);
    yield* rest;
  }
  return {
    contentType: framing.contentType,
    length: undefined,
    body: bodyStream({ readable: ReadableStream.from(input()) }, undefined, framing),
  };
}

/** The multipart framing of a file for `upload/csv` or `upload/excel`. */
function partFraming(options: LoadOptions, filename: string, definition?: string): Framing {
  const boundary = `----table-service-load-${crypto.randomUUID()}`;
  const type = EXTENSIONS[options.extension]!.type;
  const body = definition === undefined ? undefined : `{"table":${definition}}`;
  return multipartFraming(boundary, filename, type, body);
}
