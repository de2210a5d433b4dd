/**
 * How many fields a CSV file's header has, counted from its bytes before any engine reads it:
 * a file of 10,000 columns is refused for its width, not met by an engine's sniffer building a
 * vector per column.
 *
 * @module
 */

/** The delimiters DuckDB's sniffer tries. */
const DELIMITERS = [",", ";", "\t", "|"].map((d) => d.charCodeAt(0));
const QUOTE = 0x22;
const NEWLINE = 0x0a;
const RETURN = 0x0d;
/** Most bytes read looking for the header's end. */
const MAX_HEAD_BYTES = 64 << 20;

/**
 * The fields of the first line with any text of the file at `path`, split by whichever of the
 * sniffer's delimiters splits it most (the sniffer prefers the dialect with the most columns),
 * with double quotes around fields that hold delimiters or line breaks. A header longer than
 * 64 MiB is counted that far.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { csvHeaderWidth } from "./csv_head.ts";
 *
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, '\n,,\n a;"b;c";d\n1;2;3\n');
 * assert.equal(await csvHeaderWidth(path), 3);
 * await Deno.remove(path);
 * ```
 */
export async function csvHeaderWidth(path: string): Promise<number> {
  const file = await Deno.open(path);
  try {
    const counts = DELIMITERS.map(() => 1);
    const buffer = new Uint8Array(64 * 1024);
    let quoted = false;
    let text = false;
    for (let read = 0; read < MAX_HEAD_BYTES;) {
      const length = await file.read(buffer);
      if (length === null) break;
      read += length;
      for (let i = 0; i < length; i++) {
        const byte = buffer[i]!;
        if (byte === QUOTE) quoted = !quoted;
        if (quoted) {
          text = true;
          continue;
        }
        if (byte === NEWLINE || byte === RETURN) {
          if (text) return Math.max(...counts);
          counts.fill(1); // A line of separators only is no header; the next may be.
          continue;
        }
        const at = DELIMITERS.indexOf(byte);
        if (at >= 0) counts[at]!++;
        else if (byte !== 0x20) text = true;
      }
    }
    return text ? Math.max(...counts) : 0;
  } finally {
    file.close();
  }
}
