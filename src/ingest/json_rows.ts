/**
 * A streaming pass over a JSON body of rows that copies the rows out for DuckDB's
 * `read_json` and learns what it needs on the way, without parsing values in JavaScript.
 *
 * The copy is newline-delimited JSON, one row per line: DuckDB reads that format in
 * parallel, about a quarter faster than one array. The rewrite costs nothing: the array's
 * brackets become spaces, the commas between rows line breaks, and line breaks inside rows
 * spaces, all in the chunk's own bytes (which the pass owns).
 *
 * It tracks only strings, nesting and the structure around rows: which keys rows use,
 * how many rows there are, whether rows are objects or positional arrays (rewritten to
 * objects keyed "0", "1", … so one reader handles both), and, for an upload envelope
 * `{"table": …, "data": [ … ]}`, the small members around `data`, each captured and checked
 * as JSON (only `table` is kept). Whether each row value is valid JSON is left to DuckDB,
 * which reads the copy.
 *
 * @module
 */

// The pass is one byte-level state machine over private state; the hot loop keeps that state
// in locals. Beside it: json_outline.ts (where the pass is outside the rows, and the envelope's
// structural bytes), json_envelope.ts (the envelope's members), json_rows_summary.ts (options
// and summary), json_rows_errors.ts (errors, depth limit), json_row_keys.ts (key helpers) and
// json_bytes.ts (bytes, codecs).

import { ApiError } from "../errors.ts";
import {
  BACKSLASH,
  CLOSE_OBJECT,
  COMMA,
  concat,
  CR,
  DECODER,
  LBRACE,
  LBRACKET,
  LF,
  OPEN_OBJECT,
  QUOTE,
  RBRACE,
  RBRACKET,
  SPACE,
  TAB,
} from "./json_bytes.ts";
import { equalAt, firstRepeat, positionKey } from "./json_row_keys.ts";
import { malformed, MAX_DEPTH, tooDeep } from "./json_rows_errors.ts";
import { END, ENVELOPE_KEY, ENVELOPE_NEXT, Outline, ROW_START, ROWS } from "./json_outline.ts";
import type { RowForm, RowsOptions, RowsSummary } from "./json_rows_summary.ts";

/**
 * The pass itself: feed chunks to {@link JsonRows.push}, which hands the rows array (as
 * JSON objects) to `emit`, then call {@link JsonRows.finish}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JsonRows } from "./json_rows.ts";
 *
 * const out: string[] = [];
 * const pass = new JsonRows({ envelope: true, allowArrays: true, maxEnvelopeBytes: 1024 }, (b) => {
 *   out.push(new TextDecoder().decode(b));
 * });
 * pass.push(new TextEncoder().encode('{"table": {"columns": []}, "data": [[1, "a"], [2, "b"]]}'));
 * const summary = pass.finish();
 * assert.equal(out.join(""), ' {"0":1, "1":"a"}\n {"0":2, "1":"b"}\n');
 * assert.deepEqual(summary.keys, ["0", "1"]);
 * assert.deepEqual(summary.table, { columns: [] });
 * ```
 */
export class JsonRows {
  /** Where the pass is in the body's outline, and whether inside a string. */
  readonly #outline: Outline;
  #depth = 0;
  #escaped = false;
  #rows = 0;
  #form: RowForm | null = null;
  /** Current row is positional. */
  #positional = false;
  /** Positional row: index of the next value; object row: index of the next key. */
  #position = 0;
  /** Positional row: the next non-space byte at row depth starts a value (or ends the row). */
  #valueDue = false;
  /** Object row: the next string at row depth is a key. */
  #keyDue = false;
  /** Inside an object row's key string. */
  #inKey = false;
  #keyEscaped = false;
  #keyParts: Uint8Array[] = [];
  #keyStart = -1;
  /** The keys of the previous row by position, as bytes, to recognise repeats cheaply. */
  readonly #recent: Uint8Array[] = [];
  /** {@link JsonRows.#recent} decoded. */
  readonly #recentKeys: string[] = [];
  /** Sampled row: its keys so far, to refuse one given twice. */
  readonly #rowKeys = new Set<string>();
  // Past the sample, the fast path checks that each key is the sampled row's key at the same
  // position; any other key (or an escaped one) just leaves the keys unverified.
  /** Every key past the sample matched; the summary's keys then cover every row. */
  #keysVerified = true;
  /** Fast path: the next string at row depth is a key. */
  #fastKeyDue = false;
  /** Fast path: inside a key string; its bytes from earlier chunks are in #fastKeyHead. */
  #fastInKey = false;
  #fastKeyHead: Uint8Array | null = null;
  #fastPosition = 0;
  /**
   * Fast path: the first position whose sampled key is also at an earlier one (Infinity when
   * none). While every key matches the sample, a row repeats a key exactly when it reaches
   * this position. Set as the first row past the sample starts; the sample is fixed by then.
   */
  #firstRepeat: number | undefined;
  readonly #keys = new Map<string, number>();
  readonly #firstRowOfLength = new Map<number, number>();

  constructor(
    private readonly options: RowsOptions,
    private readonly emit: (bytes: Uint8Array) => void,
  ) {
    this.#outline = new Outline(options);
  }

  /** Consumes one chunk of the body. */
  push(chunk: Uint8Array): void {
    let segment = this.#outline.place === ROWS || this.#outline.place === ROW_START ? 0 : -1;
    // Partial tokens carried over from the previous chunk continue at this chunk's start.
    if (
      this.#outline.members.capturing ||
      (this.#outline.place === ENVELOPE_KEY && this.#outline.inString)
    ) {
      this.#outline.members.start = 0;
    }
    if (this.#inKey) this.#keyStart = 0;
    // The per-byte state lives in locals: fields in the hot loop cost several times more.
    let place = this.#outline.place;
    let depth = this.#depth;
    let inString = this.#outline.inString;
    let escaped = this.#escaped;
    let inKey = this.#inKey;
    let valueDue = this.#valueDue;
    let keyDue = this.#keyDue;
    const keySampleRows = this.options.keySampleRows ?? Infinity;
    let sampling = this.#rows <= keySampleRows;
    let rowDepth = this.#outline.arrayDepth + 1;
    const n = chunk.length;
    for (let i = 0; i < n; i++) {
      if (place === ROWS && !sampling && !this.#positional && !inKey) {
        // The fast path for the bulk of object rows: only strings, nesting and row starts.
        // It stops at anything else (a row that is not an object, the end of the rows) and
        // leaves that byte to the general loop below.
        let rows = this.#rows;
        const arrayDepth = rowDepth - 1;
        let rowDue = false;
        let keyDue = this.#fastKeyDue;
        let inKey = this.#fastInKey;
        let keyStart = 0;
        for (; i < n; i++) {
          if (inString && !escaped) {
            // Run to the string's closing quote, stepping over each escaped byte. A loop this
            // tight beats indexOf: row strings are short and each native call costs ~25 ns.
            let end = i;
            for (; end < n; end++) {
              const b = chunk[end]!;
              if (b === QUOTE) break;
              if (b === BACKSLASH) end++;
            }
            if (end >= n) {
              // Past the end by one: the chunk ended on a backslash.
              escaped = end > n;
              if (inKey) this.#holdKeyHead(chunk, keyStart);
              i = n;
              break;
            }
            inString = false;
            if (inKey) {
              inKey = false;
              this.#checkFastKey(chunk, keyStart, end, rows - 1);
            }
            i = end;
            continue;
          }
          const c = chunk[i]!;
          if (inString) {
            // Only the byte after a backslash that ended the previous chunk comes here.
            escaped = false;
            if (inKey) this.#keysVerified = false;
          } else if (c === QUOTE) {
            inString = true;
            if (keyDue && depth === rowDepth) {
              keyDue = false;
              inKey = true;
              keyStart = i + 1;
            }
          } else if (c <= SPACE) {
            if (c === LF || c === CR) chunk[i] = SPACE;
            else if (c !== SPACE && c !== TAB) break;
          } else if (rowDue) {
            if (c !== LBRACE) break;
            rowDue = false;
            rows++;
            depth++;
            keyDue = true;
            this.#fastPosition = 0;
          } else if (c === LBRACE || c === LBRACKET) {
            if (++depth > MAX_DEPTH) throw tooDeep();
          } else if (c === RBRACE || c === RBRACKET) {
            // The end of the rows array itself is for the general loop.
            if (depth === arrayDepth) break;
            depth--;
          } else if (c === COMMA) {
            if (depth === rowDepth) keyDue = true;
            else if (depth === arrayDepth) {
              rowDue = true;
              chunk[i] = LF;
            }
          }
        }
        this.#rows = rows;
        this.#fastKeyDue = keyDue;
        this.#fastInKey = inKey;
        if (rowDue) {
          // The byte at i (if any) starts a row the general loop must look at.
          place = ROW_START;
        }
        if (i >= n) break;
      }
      const c = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) {
          escaped = true;
          if (inKey) this.#keyEscaped = true;
        } else if (c === QUOTE) {
          inString = false;
          if (inKey) {
            inKey = false;
            this.#endKey(chunk, i);
          } else if (place === ENVELOPE_KEY) {
            this.#outline.endMemberName(chunk, i);
            place = this.#outline.place;
          }
        }
        continue;
      }
      if (c <= SPACE) {
        if (c === LF || c === CR) {
          chunk[i] = SPACE;
          continue;
        }
        if (c === SPACE || c === TAB) continue;
        throw malformed("a control character outside a string");
      }
      if (place === ROWS) {
        // The hot path: inside rows, only strings and brackets matter.
        if (valueDue && depth === rowDepth) {
          valueDue = false;
          if (c !== RBRACKET) {
            this.emit(chunk.subarray(segment, i));
            this.emit(positionKey(this.#position++));
            segment = i;
          }
        }
        if (c === QUOTE) {
          inString = true;
          if (keyDue && depth === rowDepth) {
            keyDue = false;
            inKey = true;
            this.#keyEscaped = false;
            this.#keyStart = i + 1;
          }
        } else if (c === LBRACE || c === LBRACKET) {
          if (++depth > MAX_DEPTH) throw tooDeep();
        } else if (c === RBRACE || c === RBRACKET) {
          depth--;
          if (depth === rowDepth - 1) {
            // A row ends.
            if (this.#positional) {
              this.emit(chunk.subarray(segment, i));
              this.emit(CLOSE_OBJECT);
              segment = i + 1;
              this.#notePositionalLength();
            }
          } else if (depth === rowDepth - 2) {
            // The rows array ends, and so does the last row's line: without its break,
            // DuckDB's JSON reader on two threads ran out of 256 MiB on three rows of 2,000
            // columns, half text, that fit with it (or on one thread).
            chunk[i] = LF;
            this.emit(chunk.subarray(segment, i + 1));
            segment = -1;
            place = this.options.envelope ? ENVELOPE_NEXT : END;
          }
        } else if (c === COMMA) {
          if (depth === rowDepth) {
            if (this.#positional) valueDue = true;
            else keyDue = sampling;
          } else if (depth === rowDepth - 1) {
            chunk[i] = LF;
            place = ROW_START;
          }
        }
        continue;
      }
      if (place === ROW_START) {
        if (c === RBRACKET && depth === rowDepth - 1) {
          if (this.#rows > 0) throw malformed("a trailing comma ends the rows array");
          depth--;
          chunk[i] = SPACE;
          this.emit(chunk.subarray(segment, i + 1));
          segment = -1;
          place = this.options.envelope ? ENVELOPE_NEXT : END;
          continue;
        }
        this.#startRow(c);
        valueDue = this.#positional;
        sampling = this.#rows <= keySampleRows;
        keyDue = !this.#positional && sampling;
        this.#fastKeyDue = !this.#positional && !sampling;
        this.#fastPosition = 0;
        if (!sampling) this.#firstRepeat ??= firstRepeat(this.#recentKeys);
        depth++;
        if (this.#positional) {
          this.emit(chunk.subarray(segment, i));
          this.emit(OPEN_OBJECT);
          segment = i + 1;
        }
        place = ROWS;
        continue;
      }
      // Outside the rows: the envelope or the top level, one byte at a time.
      this.#outline.place = place;
      this.#outline.inString = inString;
      depth = this.#outline.structure(c, chunk, i, depth);
      place = this.#outline.place;
      inString = this.#outline.inString;
      if (place === ROW_START) {
        // The rows array starts here; its depth is known only now.
        chunk[i] = SPACE;
        segment = i;
        rowDepth = this.#outline.arrayDepth + 1;
      }
    }
    this.#outline.place = place;
    this.#depth = depth;
    this.#outline.inString = inString;
    this.#escaped = escaped;
    this.#inKey = inKey;
    this.#valueDue = valueDue;
    this.#keyDue = keyDue;
    if (segment >= 0 && segment < n) this.emit(chunk.subarray(segment));
    if (inKey && this.#keyStart >= 0 && this.#keyStart < n) {
      this.#keyParts.push(chunk.slice(this.#keyStart));
    }
    this.#outline.members.carry(chunk, place === ENVELOPE_KEY && inString);
  }

  /** Ends the pass; throws 400 when the body was not a complete array of rows. */
  finish(): RowsSummary {
    if (this.#outline.inString || this.#outline.place !== END) {
      throw malformed("the body ends early");
    }
    return this.progress();
  }

  /** What the pass has learned so far, before the body ends. */
  progress(): RowsSummary {
    return {
      rows: this.#rows,
      form: this.#form,
      keys: [...this.#keys.keys()],
      keysComplete: this.#form === "arrays" || this.#keysVerified ||
        this.#rows <= (this.options.keySampleRows ?? Infinity),
      firstRowOfLength: this.#firstRowOfLength,
      table: this.#outline.members.table,
      hasData: this.#outline.hasData,
    };
  }

  #startRow(c: number): void {
    const form: RowForm = c === LBRACE ? "objects" : c === LBRACKET ? "arrays" : (() => {
      throw new ApiError(
        400,
        "bad_request",
        `Row ${this.#rows} is not a JSON object${this.options.allowArrays ? " or array" : ""}`,
        {
          details: [{
            row: this.#rows,
            message: "Each row must be a JSON object" +
              (this.options.allowArrays ? " or an array of values in column order" : ""),
          }],
        },
      );
    })();
    if (form === "arrays" && !this.options.allowArrays) {
      throw new ApiError(400, "bad_request", `Row ${this.#rows} is not a JSON object`, {
        details: [{ row: this.#rows, message: "Each record must be a JSON object" }],
      });
    }
    if (this.#form !== null && this.#form !== form) {
      throw new ApiError(
        400,
        "bad_request",
        `Row ${this.#rows} mixes objects and arrays; use one form per request`,
        {
          details: [{ row: this.#rows, message: "All rows must be objects, or all arrays" }],
        },
      );
    }
    this.#form = form;
    this.#positional = form === "arrays";
    this.#position = 0;
    this.#valueDue = this.#positional;
    this.#keyDue = !this.#positional;
    this.#rowKeys.clear();
    this.#rows++;
  }

  #notePositionalLength(): void {
    const length = this.#position;
    if (!this.#firstRowOfLength.has(length)) this.#firstRowOfLength.set(length, this.#rows - 1);
    for (let k = this.#keys.size; k < length; k++) this.#keys.set(String(k), k);
  }

  #endKey(chunk: Uint8Array, end: number): void {
    const position = this.#position++;
    let bytes: Uint8Array;
    if (this.#keyParts.length === 0) {
      // Rows nearly always repeat the previous row's keys: compare in place, allocate nothing.
      const recent = this.#recent[position];
      if (recent && !this.#keyEscaped && equalAt(recent, chunk, this.#keyStart, end)) {
        this.#noteRowKey(this.#recentKeys[position]!);
        return;
      }
      bytes = chunk.slice(this.#keyStart, end);
    } else {
      this.#keyParts.push(chunk.subarray(0, end));
      bytes = concat(this.#keyParts);
      this.#keyParts = [];
    }
    const key = this.#keyEscaped
      ? JSON.parse(`"${DECODER.decode(bytes)}"`) as string
      : DECODER.decode(bytes);
    if (!this.#keyEscaped) {
      this.#recent[position] = bytes;
      this.#recentKeys[position] = key;
    }
    this.#noteRowKey(key);
    if (!this.#keys.has(key)) this.#keys.set(key, this.#keys.size);
  }

  /** Sampled row: notes its next key; 400 when the row has it already. */
  #noteRowKey(key: string): void {
    if (this.#rowKeys.has(key)) throw ApiError.repeatedKey(this.#rows - 1, key);
    this.#rowKeys.add(key);
  }

  /** Fast path: keeps the start of a key that goes on in the next chunk. */
  #holdKeyHead(chunk: Uint8Array, start: number): void {
    const part = chunk.slice(start);
    this.#fastKeyHead = this.#fastKeyHead ? concat([this.#fastKeyHead, part]) : part;
  }

  /**
   * Fast path: is the key ending at `end`, in row `row`, the sampled key at its position? A
   * row past the sample can repeat a key only where the sample does, or with a key that is
   * not the sampled one: that leaves the keys to DuckDB, which refuses a repeat too.
   */
  #checkFastKey(chunk: Uint8Array, start: number, end: number, row: number): void {
    const position = this.#fastPosition++;
    const recent = this.#recent[position];
    let same: boolean;
    if (this.#fastKeyHead) {
      const whole = concat([this.#fastKeyHead, chunk.subarray(0, end)]);
      this.#fastKeyHead = null;
      same = recent !== undefined && equalAt(recent, whole, 0, whole.length);
    } else same = recent !== undefined && equalAt(recent, chunk, start, end);
    // An escaped key never equals raw sampled bytes, so it is unverified too.
    if (!same) this.#keysVerified = false;
    else if (position >= this.#firstRepeat! && this.#keysVerified) {
      // Every key so far matched the sample, this row's too: it repeats the sample's repeat.
      throw ApiError.repeatedKey(row, this.#recentKeys[position]!);
    }
  }
}
