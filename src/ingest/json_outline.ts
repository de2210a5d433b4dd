/**
 * Where a JSON rows pass (json_rows.ts) is in the body's outline outside the rows: before
 * it, in the envelope `{"table": …, "data": [ … ]}` and its members, at the rows array, after
 * it; and the structural bytes that move it from one place to the next. The pass's hot loop
 * reads the place into a local per chunk and hands a byte here only outside the rows.
 *
 * @module
 */

import { COLON, COMMA, LBRACE, LBRACKET, QUOTE, RBRACE, RBRACKET } from "./json_bytes.ts";
import { EnvelopeMembers } from "./json_envelope.ts";
import { badShape, malformed, MAX_DEPTH, tooDeep } from "./json_rows_errors.ts";
import type { RowsOptions } from "./json_rows_summary.ts";

// Where the pass is, outside strings. Plain numbers: an enum object costs a property load
// per byte in the hot loop.
/** Before the top-level value. */
export const START = 0;
/** Inside the envelope object, expecting a key or its end. */
export const ENVELOPE_KEY = 1;
/** After an envelope key, expecting ':'. */
export const ENVELOPE_COLON = 2;
/** Expecting an envelope member's value. */
export const ENVELOPE_VALUE = 3;
/** Inside a member value we skip or capture, until depth returns to the envelope. */
export const ENVELOPE_MEMBER = 4;
/** After an envelope member, expecting ',' or '}'. */
export const ENVELOPE_NEXT = 5;
/** Inside the rows array, expecting a row or ']'. */
export const ROW_START = 6;
/** Inside a row or between rows. */
export const ROWS = 7;
/** After the top-level value. */
export const END = 8;

/**
 * The pass's place, its string state, the rows array's depth and the envelope's members.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Outline, ROW_START } from "./json_outline.ts";
 *
 * const outline = new Outline({ envelope: false, allowArrays: false, maxEnvelopeBytes: 1024 });
 * const bytes = new TextEncoder().encode("[");
 * assert.equal(outline.structure(bytes[0]!, bytes, 0, 0), 1);
 * assert.equal(outline.place, ROW_START);
 * ```
 */
export class Outline {
  place: number = START;
  /** Inside a string, anywhere in the body. */
  inString = false;
  /** Depth of the rows array itself (1 bare, 2 in an envelope). */
  arrayDepth = 0;
  /** Whether the body had a rows array. */
  hasData = false;
  /** The envelope's members around the rows. */
  readonly members: EnvelopeMembers;
  readonly #envelope: boolean;

  constructor(options: RowsOptions) {
    this.#envelope = options.envelope;
    this.members = new EnvelopeMembers(options.maxEnvelopeBytes);
  }

  /** Ends an envelope member's name at `end`. */
  endMemberName(chunk: Uint8Array, end: number): void {
    this.members.endName(chunk, end);
    this.place = ENVELOPE_COLON;
  }

  /** One structural byte outside the rows; returns the new depth. */
  structure(c: number, chunk: Uint8Array, i: number, depth: number): number {
    switch (this.place) {
      case START:
        if (this.#envelope) {
          if (c !== LBRACE) throw badShape('the body must be a JSON object with "data"');
          this.place = ENVELOPE_KEY;
          return 1;
        }
        if (c !== LBRACKET) throw badShape("the body must be a JSON array of records");
        this.arrayDepth = 1;
        this.hasData = true;
        this.place = ROW_START;
        return 1;
      case ENVELOPE_KEY:
        if (c === RBRACE && this.members.count === 0) {
          this.place = END;
          return 0;
        }
        if (c !== QUOTE) throw malformed("expected a member name");
        this.inString = true;
        this.members.start = i + 1;
        return depth;
      case ENVELOPE_COLON:
        if (c !== COLON) throw malformed("expected ':'");
        this.place = ENVELOPE_VALUE;
        return depth;
      case ENVELOPE_VALUE:
        if (this.members.name === "data" && c === LBRACKET) {
          this.arrayDepth = 2;
          this.hasData = true;
          this.place = ROW_START;
          return 2;
        }
        if (this.members.name === "data" && c !== 0x6e /* n of null */) {
          throw badShape('"data" must be an array of rows');
        }
        // Every other member is captured too, so that it is checked as JSON; only "table"
        // is kept.
        this.members.beginValue(i);
        this.place = ENVELOPE_MEMBER;
        return this.#member(c, chunk, i, depth);
      case ENVELOPE_MEMBER:
        return this.#member(c, chunk, i, depth);
      case ENVELOPE_NEXT:
        if (c === COMMA) {
          this.place = ENVELOPE_KEY;
          return depth;
        }
        if (c === RBRACE && depth === 1) {
          this.place = END;
          return 0;
        }
        throw malformed("expected ',' or '}' after a member");
      case END:
        throw malformed("unexpected content after the end of the body");
      default:
        throw malformed("unexpected character");
    }
  }

  /** Inside a skipped or captured envelope member value. */
  #member(c: number, chunk: Uint8Array, i: number, depth: number): number {
    if (c === QUOTE) {
      this.inString = true;
      return depth;
    }
    let next = depth;
    if (c === LBRACE || c === LBRACKET) {
      if (++next > MAX_DEPTH) throw tooDeep();
      this.members.open(c === LBRACE ? RBRACE : RBRACKET);
      return next;
    }
    if ((c === RBRACE || c === RBRACKET) && depth > 1) {
      this.members.close(c);
    }
    if (c === RBRACE || c === RBRACKET) next--;
    const ends = next === 1 && (c === RBRACE || c === RBRACKET || c === COMMA);
    const closesEnvelope = next === 0 && c === RBRACE;
    if (c === COMMA && depth === 1 || closesEnvelope) {
      // A scalar member ends at the ',' or '}' after it.
      this.members.finish(chunk, i);
      if (closesEnvelope) {
        this.place = END;
        return 0;
      }
      this.place = ENVELOPE_KEY;
      return depth;
    }
    if (ends) {
      this.members.finish(chunk, i + 1);
      this.place = ENVELOPE_NEXT;
    }
    return next;
  }
}
