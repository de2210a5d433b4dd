/**
 * The forms of dates, times and UUIDs a JSON string takes to be plain in such a column
 * (copy_json.ts), matched byte by byte on the string's raw content: ISO 8601 dates; times of
 * day with hours to 23, minutes and seconds to 59 and at most six digits of a fraction, after
 * `T` or a space; for timestamp with time zone a `Z` or an offset within ±15:59; UUIDs in
 * 8-4-4-4-12 hex digits. PostgreSQL judges the values (a 30 February, say).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TIMESTAMPTZ } from "./text_forms.ts";
 *
 * const raw = new TextEncoder().encode("2024-01-01T10:00:00.5+05:30");
 * assert.equal(TIMESTAMPTZ(raw, 0, raw.length), true);
 * const beyond = new TextEncoder().encode("2024-01-01T10:00:00+16:00");
 * assert.equal(TIMESTAMPTZ(beyond, 0, beyond.length), false);
 * ```
 *
 * @module
 */

import { COLON } from "../../ingest/json_bytes.ts";

/** Whether `bytes[start, end)` (a JSON string's raw content) has a form. */
export type Matcher = (bytes: Uint8Array, start: number, end: number) => boolean;

function digitsAt(bytes: Uint8Array, at: number, count: number): boolean {
  for (let k = 0; k < count; k++) {
    const c = bytes[at + k]!;
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** The two digits at `at` as a number. */
function twoDigits(bytes: Uint8Array, at: number): number {
  return (bytes[at]! - 0x30) * 10 + bytes[at + 1]! - 0x30;
}

/** `YYYY-MM-DD` at `at` (digits and dashes; PostgreSQL judges the date). */
function dateAt(bytes: Uint8Array, at: number): boolean {
  return digitsAt(bytes, at, 4) && bytes[at + 4] === 0x2d && digitsAt(bytes, at + 5, 2) &&
    bytes[at + 7] === 0x2d && digitsAt(bytes, at + 8, 2);
}

/**
 * `[T ]hh:mm:ss[.f{1,6}]` at `at`, hours to 23, minutes and seconds to 59; the index after
 * it, or -1.
 */
function clockAt(bytes: Uint8Array, at: number, end: number): number {
  const t = bytes[at];
  if (t !== 0x54 && t !== 0x20) return -1;
  if (
    !digitsAt(bytes, at + 1, 2) || bytes[at + 3] !== COLON || !digitsAt(bytes, at + 4, 2) ||
    bytes[at + 6] !== COLON || !digitsAt(bytes, at + 7, 2) || twoDigits(bytes, at + 1) > 23 ||
    twoDigits(bytes, at + 4) > 59 || twoDigits(bytes, at + 7) > 59
  ) return -1;
  let i = at + 9;
  if (bytes[i] === 0x2e) {
    let digits = 0;
    while (i + 1 < end && digitsAt(bytes, i + 1, 1)) (i++, digits++);
    if (digits === 0 || digits > 6) return -1;
    i++;
  }
  return i;
}

export const DATE: Matcher = (b, start, end) => end - start === 10 && dateAt(b, start);
export const TIMESTAMP: Matcher = (b, start, end) =>
  end - start >= 19 && dateAt(b, start) && clockAt(b, start + 10, end) === end;
/** A timestamp ending in `Z` or an offset `±hh:mm` within ±15:59. */
export const TIMESTAMPTZ: Matcher = (b, start, end) => {
  if (end - start < 20 || !dateAt(b, start)) return false;
  const i = clockAt(b, start + 10, end);
  if (i < 0) return false;
  if (b[i] === 0x5a) return i + 1 === end;
  return (b[i] === 0x2b || b[i] === 0x2d) && i + 6 === end && digitsAt(b, i + 1, 2) &&
    b[i + 3] === COLON && digitsAt(b, i + 4, 2) && twoDigits(b, i + 1) <= 15 &&
    twoDigits(b, i + 4) <= 59;
};
/** 8-4-4-4-12 hex digits. */
export const UUID: Matcher = (b, start, end) => {
  if (end - start !== 36) return false;
  for (let k = 0; k < 36; k++) {
    const c = b[start + k]!;
    if (k === 8 || k === 13 || k === 18 || k === 23) {
      if (c !== 0x2d) return false;
    } else if (
      !((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46))
    ) {
      return false;
    }
  }
  return true;
};
