/**
 * A file's header names mapped to column names, as an upload's `body` part asks
 * (`"headers": {"Unit Price": "price"}`): the mapping checked, a name looked up in it, and a
 * CSV file's header line rewritten with the new names before any engine reads it.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/** File header → column name, as the `body` part gives it. */
export type HeaderNames = Readonly<Record<string, string>>;

/** The delimiters DuckDB's sniffer tries (as csv_head.ts counts them). */
const DELIMITERS = [",", ";", "\t", "|"];
/** Most bytes read looking for the header's end. */
const MAX_HEAD_BYTES = 64 << 20;

/**
 * The mapping of a `body` part's `headers` member: an object of non-empty names; 400
 * otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readHeaderNames } from "./header_names.ts";
 *
 * assert.deepEqual(readHeaderNames({ "Unit Price": "price" }), { "Unit Price": "price" });
 * assert.equal(readHeaderNames(null), undefined);
 * assert.throws(() => readHeaderNames({ a: 1 }), /headers/);
 * ```
 */
export function readHeaderNames(value: unknown): HeaderNames | undefined {
  if (value === undefined || value === null) return undefined;
  const refuse = (why: string) =>
    ApiError.badRequest(
      `The body part's headers must map each file header to a column name, {"Unit Price": "price"}: ${why}`,
    );
  if (typeof value !== "object" || Array.isArray(value)) throw refuse("it is not an object");
  for (const [header, name] of Object.entries(value)) {
    if (typeof name !== "string" || name.trim() === "") {
      throw refuse(`"${header}" maps to ${JSON.stringify(name)}`);
    }
  }
  return value as HeaderNames;
}

/**
 * A renamer of header names by `names`: a header matches a key exactly, else in any case.
 * `unused()` lists the keys no header matched, to refuse them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { headerRenamer } from "./header_names.ts";
 *
 * const rename = headerRenamer({ "Unit Price": "price", QTY: "quantity" });
 * assert.equal(rename.name("Unit Price"), "price");
 * assert.equal(rename.name("qty"), "quantity");
 * assert.equal(rename.name("note"), "note");
 * assert.deepEqual(rename.unused(), []);
 * ```
 */
export function headerRenamer(names: HeaderNames): {
  name(header: string): string;
  unused(): string[];
} {
  const keys = Object.keys(names);
  const used = new Set<string>();
  return {
    name(header) {
      const key = keys.find((k) => k.trim() === header) ??
        keys.find((k) => k.trim().toLowerCase() === header.toLowerCase());
      if (key === undefined) return header;
      used.add(key);
      return names[key]!.trim();
    },
    unused: () => keys.filter((k) => !used.has(k)),
  };
}

/** 422 naming the mapped headers the file does not have. */
export function checkHeadersUsed(unused: readonly string[], headers: readonly string[]): void {
  if (unused.length === 0) return;
  throw ApiError.invalidData(
    `The file has no header "${unused[0]}"; its headers are ${
      headers.map((h) => `"${h}"`).join(", ")
    }`,
    unused.map((h) => ({ column: h, message: "No such header in the file" })),
  );
}

/**
 * Writes the CSV file at `path` to `outPath` with its header line's names mapped by `names`
 * (422 for a mapped header it lacks). The header is the first line with any text, split by
 * whichever of the sniffer's delimiters splits it most; the new names are written quoted, and
 * every byte after the header line is copied as it is.
 */
export async function renameCsvHeader(
  path: string,
  names: HeaderNames,
  outPath: string,
): Promise<void> {
  const { rest, delimiter, fields } = await headerFields(path);
  const rename = headerRenamer(names);
  const renamed = fields.map((f) => f.trim() === "" ? "" : rename.name(f.trim()));
  checkHeadersUsed(rename.unused(), fields.map((f) => f.trim()).filter((f) => f !== ""));
  const header = renamed.map((f) => f === "" ? "" : `"${f.replaceAll('"', '""')}"`)
    .join(delimiter);
  const input = await Deno.open(path);
  await input.seek(rest, Deno.SeekMode.Start);
  const lines = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(`${header}\n`));
      controller.close();
    },
  });
  const out = await Deno.open(outPath, { write: true, createNew: true, mode: 0o600 });
  // The new header line, then the file's bytes after its own.
  await concatenated([lines, input.readable]).pipeTo(out.writable);
}

/** The bytes of `streams`, one after the other. */
function concatenated(streams: ReadableStream<Uint8Array>[]): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (true) {
        reader ??= streams.shift()?.getReader();
        if (!reader) return controller.close();
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        reader = undefined;
      }
    },
  });
}

/**
 * The names of the CSV file's header at `path`, blank ones left out: the first line with any
 * text, split as {@link renameCsvHeader} splits it.
 */
export async function csvHeaderNames(path: string): Promise<string[]> {
  const { fields } = await headerFields(path);
  return fields.map((f) => f.trim()).filter((f) => f !== "");
}

/**
 * The CSV file's header line at `path` split into its fields by whichever of the sniffer's
 * delimiters splits it most, and the offset of the bytes after it.
 */
async function headerFields(
  path: string,
): Promise<{ rest: number; delimiter: string; fields: string[] }> {
  const { line, rest } = await headerLine(path);
  const delimiter = DELIMITERS.reduce((best, d) =>
    splitFields(line, d).length > splitFields(line, best).length ? d : best
  );
  return { rest, delimiter, fields: splitFields(line, delimiter) };
}

/** The first line with any text, as text, and the offset of the byte after it. */
async function headerLine(path: string): Promise<{ line: string; rest: number }> {
  const file = await Deno.open(path);
  try {
    const buffer = new Uint8Array(64 * 1024);
    const bytes: number[] = [];
    let quoted = false;
    let offset = 0;
    let start = 0;
    while (offset < MAX_HEAD_BYTES) {
      const length = await file.read(buffer);
      if (length === null) break;
      for (let i = 0; i < length; i++, offset++) {
        const byte = buffer[i]!;
        if (byte === 0x22) quoted = !quoted;
        if (!quoted && (byte === 0x0a || byte === 0x0d)) {
          const line = new TextDecoder().decode(new Uint8Array(bytes.slice(start)));
          if (/[^,;\t| ]/.test(line)) {
            // A CRLF's LF belongs to the header line.
            const lf = byte === 0x0d && (i + 1 < length ? buffer[i + 1] === 0x0a : false);
            return { line, rest: offset + (lf ? 2 : 1) };
          }
          start = bytes.length;
          continue;
        }
        bytes.push(byte);
      }
    }
    const line = new TextDecoder().decode(new Uint8Array(bytes.slice(start)));
    if (!/[^,;\t| ]/.test(line)) throw ApiError.badRequest("The CSV file has no header row");
    return { line, rest: offset };
  } finally {
    file.close();
  }
}

/** A CSV line's fields by `delimiter`, double quotes taken off (`""` a quote inside). */
function splitFields(line: string, delimiter: string): string[] {
  const fields: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') {
      if (quoted && line[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = !quoted;
    } else if (c === delimiter && !quoted) {
      fields.push(field);
      field = "";
    } else field += c;
  }
  fields.push(field);
  return fields;
}
