/**
 * The members of an upload envelope around its rows (`{"table": …, "data": [ … ]}`) as the
 * JSON pass of json_rows.ts meets them: each member's name, refused when repeated, and each
 * value other than `data` captured (within `maxBytes`) and checked as JSON; only `table` is
 * kept. The pass finds where names and values begin and end; this holds what they hold.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import { concat, DECODER, STRICT_DECODER } from "./json_bytes.ts";
import { badShape, malformed } from "./json_rows_errors.ts";

/** Longest member name, in bytes: the envelope's names are short words. */
const MAX_NAME_BYTES = 256;

/** The envelope members met so far, and the one under way. */
export class EnvelopeMembers {
  /** The name of the member under way. */
  name = "";
  /** Where the name or captured value under way began in the current chunk; -1 when none. */
  start = -1;
  /** The `table` member's value, once met. */
  table: unknown = undefined;
  #nameParts: Uint8Array[] = [];
  #capture: Uint8Array[] | null = null;
  #bytes = 0;
  /** Open brackets of the value being captured, to catch mismatches. */
  #brackets: number[] = [];
  readonly #seen = new Set<string>();

  constructor(private readonly maxBytes: number) {}

  /** Is a member value being captured? */
  get capturing(): boolean {
    return this.#capture !== null;
  }

  /** How many members have been named. */
  get count(): number {
    return this.#seen.size;
  }

  /** The chunk ended inside a member's name (`inName`) or captured value: keeps its part. */
  carry(chunk: Uint8Array, inName: boolean): void {
    if (this.start < 0) return;
    if (this.#capture) this.#keep(chunk.subarray(this.start));
    if (inName) {
      this.#nameParts.push(chunk.slice(this.start));
      if (this.#nameParts.reduce((s, p) => s + p.length, 0) > MAX_NAME_BYTES) {
        throw badShape("an envelope key is too long");
      }
    }
  }

  /** A member's name ends before `end`; 400 when the envelope has it already. */
  endName(chunk: Uint8Array, end: number): void {
    this.#nameParts.push(chunk.subarray(this.start, end));
    this.name = JSON.parse(`"${DECODER.decode(concat(this.#nameParts))}"`);
    this.#nameParts = [];
    this.start = -1;
    if (this.#seen.has(this.name)) throw badShape(`the member "${this.name}" appears twice`);
    this.#seen.add(this.name);
  }

  /** The member's value begins at `start`: captured until {@link finish}. */
  beginValue(start: number): void {
    this.#capture = [];
    this.#bytes = 0;
    this.#brackets = [];
    this.start = start;
  }

  /** A bracket opens in the captured value. */
  open(closer: number): void {
    this.#brackets.push(closer);
  }

  /** A bracket closes in the captured value; 400 when it is not the one open. */
  close(c: number): void {
    if (this.#brackets.pop() !== c) throw malformed("mismatched brackets");
  }

  /** The captured value ends before `end`: checked as JSON, and kept when it is `table`. */
  finish(chunk: Uint8Array, end: number): void {
    if (this.#capture) {
      this.#keep(chunk.subarray(this.start, end));
      let value: unknown;
      try {
        value = JSON.parse(STRICT_DECODER.decode(concat(this.#capture)));
      } catch {
        throw malformed(`the "${this.name}" member is not valid JSON`);
      }
      if (this.name === "table") this.table = value ?? undefined;
    }
    this.#capture = null;
    this.start = -1;
  }

  #keep(bytes: Uint8Array): void {
    this.#bytes += bytes.length;
    if (this.#bytes > this.maxBytes) {
      throw new ApiError(
        413,
        "payload_too_large",
        `The "${this.name}" member is larger than ${this.maxBytes} bytes`,
      );
    }
    this.#capture!.push(bytes.slice());
  }
}
