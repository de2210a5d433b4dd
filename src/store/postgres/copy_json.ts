/**
 * JSON rows as the text `COPY … FROM STDIN` reads: one pass over the bytes of
 * newline-delimited JSON objects (as the spool keeps them) that writes each row's values in
 * column order, tab-separated, `\N` for null. It is also what says which values are plain,
 * for the insert in one statement (direct_inserts.ts) as for COPY: JSON booleans into
 * boolean, integers into integer types, numbers (not a negative zero) into double precision,
 * strings into text, ISO 8601 dates and times and canonical UUIDs as strings. A value of any
 * other kind throws {@link NotPlain}, and the rows go the staging's way.
 *
 * PostgreSQL converts each value's text on `COPY` as it does on the direct insert's cast, so
 * both store the same values; and a row that breaks neither rules nor JSON is refused by
 * PostgreSQL as there (a number out of range, an impossible date, a text too long).
 *
 * @module
 */

import type { KeyColumn } from "../../catalog/rows.ts";
import type { InsertionBlocks } from "./insertion_values.ts";
import { DATE, type Matcher, TIMESTAMP, TIMESTAMPTZ, UUID } from "./text_forms.ts";
import {
  BACKSLASH,
  COLON,
  COMMA,
  LBRACE,
  LF,
  QUOTE,
  RBRACE,
  TAB,
} from "../../ingest/json_bytes.ts";

/** A value the pass does not carry as it is: the rows are to be staged. */
export class NotPlain extends Error {}

/** How a column takes values: the JSON kind it accepts, and for strings what they match. */
type Rule =
  | { readonly kind: "boolean" | "integer" | "float" | "text" }
  | { readonly kind: "pattern"; readonly matches: Matcher };

/** The rules by PostgreSQL's canonical type names: the types values go straight into. */
const RULES: ReadonlyMap<string, Rule> = new Map<string, Rule>([
  ["boolean", { kind: "boolean" }],
  ["smallint", { kind: "integer" }],
  ["integer", { kind: "integer" }],
  ["bigint", { kind: "integer" }],
  ["double precision", { kind: "float" }],
  ["text", { kind: "text" }],
  ["character varying", { kind: "text" }],
  ["date", { kind: "pattern", matches: DATE }],
  ["timestamp without time zone", { kind: "pattern", matches: TIMESTAMP }],
  ["timestamp with time zone", { kind: "pattern", matches: TIMESTAMPTZ }],
  ["uuid", { kind: "pattern", matches: UUID }],
]);

/** The rule for a column of `type`, or undefined when its values are never plain. */
export function copyRule(type: string): Rule | undefined {
  return RULES.get(type.replace(/^character varying\(\d+\)$/, "character varying"));
}

/** Whether `c` is JSON whitespace. */
function space(c: number): boolean {
  return c === 0x20 || c === LF || c === 0x0d || c === TAB;
}

/** The room a row's values start with in {@link CopyText}'s scratch buffer. */
const SCRATCH_BYTES = 1 << 12;

/**
 * Turns parts of a body of rows into COPY text for the columns of `mapping`, in its order:
 * a key the mapping has not is not plain; a column a row leaves out is null.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CopyText } from "./copy_json.ts";
 *
 * const column = (id: number, name: string, type: string) =>
 *   ({ id, name, type, default: null, is_nullable: true });
 * const copy = new CopyText([
 *   { key: "a", column: column(1, "a", "integer") },
 *   { key: "b", column: column(2, "b", "text") },
 * ]);
 * const text = copy.rows(new TextEncoder().encode('{"a": 1, "b": "x\\ty"}\n{"b": null}\n'));
 * assert.equal(new TextDecoder().decode(text), "1\tx\\ty\n\\N\t\\N\n");
 * assert.equal(copy.plain(new TextEncoder().encode('{"a": 2}\n')), true);
 * assert.equal(copy.plain(new TextEncoder().encode('{"a": 2.5}\n')), false);
 * ```
 */
export class CopyText {
  readonly #rules: Rule[];
  readonly #columns: ReadonlyMap<string, number>;
  /** The previous row's keys by position, as bytes, and their columns: rows repeat them. */
  readonly #recent: { key: Uint8Array; column: number }[] = [];
  #out = new Uint8Array(0);
  #at = 0;
  /** Where each column's text is in the scratch buffer of the row, -1 when absent. */
  readonly #starts: Int32Array;
  readonly #ends: Int32Array;
  #scratch = new Uint8Array(SCRATCH_BYTES);
  #scratchAt = 0;
  #rows = 0;
  /** With them, each row ends with its value of the insertion order, after its columns'. */
  readonly #insertions: InsertionBlocks | undefined;

  constructor(mapping: readonly KeyColumn[], insertions?: InsertionBlocks) {
    this.#insertions = insertions;
    this.#rules = mapping.map((m) => {
      const rule = copyRule(m.column.type);
      if (!rule) throw new NotPlain(`Column "${m.column.name}" is of type ${m.column.type}`);
      return rule;
    });
    this.#columns = new Map(mapping.map((m, i) => [m.key, i]));
    this.#starts = new Int32Array(mapping.length);
    this.#ends = new Int32Array(mapping.length);
  }

  /** Rows written so far. */
  get count(): number {
    return this.#rows;
  }

  /** COPY text of the rows in `bytes` (whole lines, one object each), in a buffer of its own. */
  rows(bytes: Uint8Array): Uint8Array {
    this.#out = new Uint8Array(bytes.length + (bytes.length >> 2) + 1024);
    this.#at = 0;
    this.#scan(bytes, true);
    return this.#out.subarray(0, this.#at);
  }

  /**
   * Whether every value of the rows in `bytes` is plain in its column: {@link rows} without
   * writing their COPY text, which a check before a statement of another form has no use for.
   */
  plain(bytes: Uint8Array): boolean {
    try {
      this.#scan(bytes, false);
      return true;
    } catch (error) {
      if (error instanceof NotPlain) return false;
      throw error;
    } finally {
      // A checker may be kept between bodies: it keeps no large value's room.
      if (this.#scratch.length > SCRATCH_BYTES) this.#scratch = new Uint8Array(SCRATCH_BYTES);
    }
  }

  /** Reads each row of `bytes`, with `emit` writing it to the output. */
  #scan(bytes: Uint8Array, emit: boolean): void {
    let i = 0;
    const n = bytes.length;
    while (i < n) {
      while (i < n && space(bytes[i]!)) i++;
      if (i >= n) break;
      if (bytes[i] !== LBRACE) throw new NotPlain("A row is not an object");
      i = this.#row(bytes, i + 1, emit);
    }
  }

  /** One object from after its `{`; returns the index after its `}`. */
  #row(bytes: Uint8Array, from: number, emit: boolean): number {
    this.#starts.fill(-1);
    this.#scratchAt = 0;
    let i = from;
    let position = 0;
    while (true) {
      while (space(bytes[i]!)) i++;
      if (bytes[i] === RBRACE && position === 0) {
        i++;
        break;
      }
      if (bytes[i] !== QUOTE) throw new NotPlain("A key is not a string");
      const keyEnd = stringEnd(bytes, i + 1);
      const column = this.#column(bytes, i + 1, keyEnd, position++);
      i = keyEnd + 1;
      while (space(bytes[i]!)) i++;
      if (bytes[i++] !== COLON) throw new NotPlain("A key has no value");
      while (space(bytes[i]!)) i++;
      if (this.#starts[column] !== -1) throw new NotPlain("A row repeats a key");
      this.#starts[column] = this.#scratchAt;
      i = this.#value(bytes, i, this.#rules[column]!);
      this.#ends[column] = this.#scratchAt;
      while (space(bytes[i]!)) i++;
      const c = bytes[i++];
      if (c === RBRACE) break;
      if (c !== COMMA) throw new NotPlain("A row is not one JSON object");
    }
    if (emit) this.#emitRow();
    return i;
  }

  /** The column of the key in `bytes[start, end)`, the `position`th of its row. */
  #column(bytes: Uint8Array, start: number, end: number, position: number): number {
    const recent = this.#recent[position];
    if (recent && sameBytes(recent.key, bytes, start, end)) return recent.column;
    const raw = bytes.subarray(start, end);
    const key = raw.includes(BACKSLASH)
      ? JSON.parse(DECODER.decode(bytes.subarray(start - 1, end + 1))) as string
      : DECODER.decode(raw);
    const column = this.#columns.get(key);
    if (column === undefined) throw new NotPlain(`Key "${key}" is not a column's`);
    this.#recent[position] = { key: raw.slice(), column };
    return column;
  }

  /** One value at `i` into the scratch buffer as `rule` takes it; the index after it. */
  #value(bytes: Uint8Array, i: number, rule: Rule): number {
    const c = bytes[i]!;
    if (c === QUOTE) {
      const end = stringEnd(bytes, i + 1);
      if (rule.kind === "text") this.#text(bytes, i + 1, end);
      else if (rule.kind === "pattern" && rule.matches(bytes, i + 1, end)) {
        this.#copy(bytes, i + 1, end);
      } else throw new NotPlain("A string is not plain in its column");
      return end + 1;
    }
    if (c === 0x6e && literal(bytes, i, NULL_WORD)) {
      this.#copy(NULL, 0, 2);
      return i + 4;
    }
    if (rule.kind === "boolean") {
      if (c === 0x74 && literal(bytes, i, TRUE_WORD)) {
        this.#copy(TRUE, 0, 1);
        return i + 4;
      }
      if (c === 0x66 && literal(bytes, i, FALSE_WORD)) {
        this.#copy(FALSE, 0, 1);
        return i + 5;
      }
    } else if (rule.kind === "integer" || rule.kind === "float") {
      const end = numberEnd(bytes, i, rule.kind === "integer");
      if (end > 0) {
        this.#copy(bytes, i, end);
        return end;
      }
    }
    throw new NotPlain("A value is not plain in its column");
  }

  /** A JSON string's content, `bytes[start, end)`, unescaped and escaped as COPY text. */
  #text(bytes: Uint8Array, start: number, end: number): void {
    this.#reserve((end - start) * 2);
    const out = this.#scratch;
    let at = this.#scratchAt;
    for (let i = start; i < end; i++) {
      const c = bytes[i]!;
      if (c < 0x20) throw new NotPlain("A string holds a control character");
      if (c !== BACKSLASH) {
        out[at++] = c;
        continue;
      }
      const e = bytes[++i];
      switch (e) {
        case QUOTE:
          out[at++] = QUOTE;
          break;
        case 0x2f: // '/'
          out[at++] = 0x2f;
          break;
        case BACKSLASH:
        case 0x62: // b
        case 0x66: // f
        case 0x6e: // n
        case 0x72: // r
        case 0x74: // t
          // COPY text spells these as JSON does.
          out[at++] = BACKSLASH;
          out[at++] = e;
          break;
        case 0x75: { // u
          let code = hex4(bytes, i + 1);
          i += 4;
          if (code >= 0xd800 && code <= 0xdbff) {
            if (bytes[i + 1] !== BACKSLASH || bytes[i + 2] !== 0x75) {
              throw new NotPlain("A string holds a lone surrogate");
            }
            const low = hex4(bytes, i + 3);
            if (low < 0xdc00 || low > 0xdfff) throw new NotPlain("A string holds a lone surrogate");
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
            i += 6;
          } else if (code >= 0xdc00 && code <= 0xdfff) {
            throw new NotPlain("A string holds a lone surrogate");
          }
          if (code === 0) throw new NotPlain("A string holds NUL, which no text holds");
          at = utf8(out, at, code);
          break;
        }
        default:
          throw new NotPlain("A string holds an escape JSON has not");
      }
    }
    this.#scratchAt = at;
  }

  /** `bytes[start, end)` to the scratch buffer as they are. */
  #copy(bytes: Uint8Array, start: number, end: number): void {
    this.#reserve(end - start);
    const out = this.#scratch;
    let at = this.#scratchAt;
    for (let i = start; i < end; i++) out[at++] = bytes[i]!;
    this.#scratchAt = at;
  }

  #reserve(bytes: number): void {
    if (this.#scratchAt + bytes <= this.#scratch.length) return;
    const grown = new Uint8Array(Math.max(this.#scratch.length * 2, this.#scratchAt + bytes));
    grown.set(this.#scratch.subarray(0, this.#scratchAt));
    this.#scratch = grown;
  }

  /** The row's values, in column order, to the output. */
  #emitRow(): void {
    const columns = this.#starts.length;
    let size = columns; // tabs and the line break
    for (let c = 0; c < columns; c++) {
      size += this.#starts[c] === -1 ? 2 : this.#ends[c]! - this.#starts[c]!;
    }
    if (this.#insertions) size += 17; // a tab and a safe integer's digits
    if (this.#at + size > this.#out.length) {
      const grown = new Uint8Array(Math.max(this.#out.length * 2, this.#at + size));
      grown.set(this.#out.subarray(0, this.#at));
      this.#out = grown;
    }
    const out = this.#out;
    for (let c = 0; c < columns; c++) {
      if (c > 0) out[this.#at++] = TAB;
      const start = this.#starts[c]!;
      if (start === -1) {
        out[this.#at++] = BACKSLASH;
        out[this.#at++] = 0x4e; // N
      } else {
        const scratch = this.#scratch;
        let at = this.#at;
        for (let i = start, end = this.#ends[c]!; i < end; i++) out[at++] = scratch[i]!;
        this.#at = at;
      }
    }
    if (this.#insertions) {
      out[this.#at++] = TAB;
      this.#at = writeDigits(out, this.#at, this.#insertions.next());
    }
    out[this.#at++] = LF;
    this.#rows++;
  }
}

/** The decimal digits of `n`, a non-negative safe integer, at `at`; the index after them. */
function writeDigits(out: Uint8Array, at: number, n: number): number {
  let digits = 1;
  for (let power = 10; power <= n; power *= 10) digits++;
  for (let k = at + digits - 1; k >= at; k--) {
    out[k] = 0x30 + n % 10;
    n = Math.floor(n / 10);
  }
  return at + digits;
}

/** One decoder for every key: making one costs more than a key's decoding. */
const DECODER = new TextDecoder();

const NULL = new TextEncoder().encode("\\N");
const TRUE = new TextEncoder().encode("t");
const FALSE = new TextEncoder().encode("f");
const NULL_WORD = new TextEncoder().encode("null");
const TRUE_WORD = new TextEncoder().encode("true");
const FALSE_WORD = new TextEncoder().encode("false");

/** Whether `word` stands at `at`, followed by what ends a value. */
function literal(bytes: Uint8Array, at: number, word: Uint8Array): boolean {
  for (let k = 0; k < word.length; k++) if (bytes[at + k] !== word[k]) return false;
  const next = bytes[at + word.length];
  return next === undefined || delimits(next);
}

function digit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/**
 * The end of the JSON number at `at`, when it is one and plain: for `integer` without a
 * fraction or exponent; otherwise any but a negative zero (`-0`, `-0.0`, `-0e5`), which the
 * staging reads as the integer 0. -1 when it is not.
 */
function numberEnd(bytes: Uint8Array, at: number, integer: boolean): number {
  let i = at;
  const negative = bytes[i] === 0x2d;
  if (negative) i++;
  let zero = false;
  if (bytes[i] === 0x30) {
    zero = true;
    i++;
  } else if (digit(bytes[i])) { while (digit(bytes[i])) i++; }
  else return -1;
  if (bytes[i] === 0x2e) {
    if (integer || !digit(bytes[++i])) return -1;
    while (digit(bytes[i])) if (bytes[i++] !== 0x30) zero = false;
  }
  if (bytes[i] === 0x65 || bytes[i] === 0x45) {
    if (integer) return -1;
    i++;
    if (bytes[i] === 0x2b || bytes[i] === 0x2d) i++;
    if (!digit(bytes[i])) return -1;
    while (digit(bytes[i])) i++;
  }
  if (negative && zero && !integer) return -1;
  const next = bytes[i];
  return next === undefined || delimits(next) ? i : -1;
}

/** Where the JSON string starting at `from` (after its quote) ends: its closing quote. */
function stringEnd(bytes: Uint8Array, from: number): number {
  for (let i = from; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === QUOTE) return i;
    if (c === BACKSLASH) i++;
  }
  throw new NotPlain("A string does not end");
}

/** Whether `c` ends a literal or a number. */
function delimits(c: number): boolean {
  return c === COMMA || c === RBRACE || space(c) || c === 0x5d;
}

function sameBytes(a: Uint8Array, b: Uint8Array, start: number, end: number): boolean {
  if (a.length !== end - start) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[start + i]) return false;
  return true;
}

function hex4(bytes: Uint8Array, at: number): number {
  let code = 0;
  for (let k = 0; k < 4; k++) {
    const c = bytes[at + k];
    const digit = c === undefined
      ? -1
      : c >= 0x30 && c <= 0x39
      ? c - 0x30
      : c >= 0x61 && c <= 0x66
      ? c - 0x57
      : c >= 0x41 && c <= 0x46
      ? c - 0x37
      : -1;
    if (digit < 0) throw new NotPlain("A \\u escape is not four hex digits");
    code = code * 16 + digit;
  }
  return code;
}

/** Writes `code`'s UTF-8 bytes at `at`; returns the index after them. */
function utf8(out: Uint8Array, at: number, code: number): number {
  if (code < 0x80) {
    // A control character as COPY text spells it; others as they are.
    if (code === BACKSLASH || code < 0x20 || code === 0x7f) {
      const escaped = new TextEncoder().encode(`\\${code.toString(8).padStart(3, "0")}`);
      out.set(escaped, at);
      return at + escaped.length;
    }
    out[at] = code;
    return at + 1;
  }
  if (code < 0x800) {
    out[at] = 0xc0 | (code >> 6);
    out[at + 1] = 0x80 | (code & 0x3f);
    return at + 2;
  }
  if (code < 0x10000) {
    out[at] = 0xe0 | (code >> 12);
    out[at + 1] = 0x80 | ((code >> 6) & 0x3f);
    out[at + 2] = 0x80 | (code & 0x3f);
    return at + 3;
  }
  out[at] = 0xf0 | (code >> 18);
  out[at + 1] = 0x80 | ((code >> 12) & 0x3f);
  out[at + 2] = 0x80 | ((code >> 6) & 0x3f);
  out[at + 3] = 0x80 | (code & 0x3f);
  return at + 4;
}
