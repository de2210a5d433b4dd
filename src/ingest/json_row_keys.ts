/**
 * Row key helpers of the JSON rows pass: keys of positional rows, comparing key bytes in
 * place, and finding a repeated key.
 *
 * @module
 */

import { ENCODER } from "./json_bytes.ts";

const POSITION_KEYS: Uint8Array[] = [];

/** The key bytes `"<position>":` written before a positional row's value. */
export function positionKey(position: number): Uint8Array {
  return POSITION_KEYS[position] ??= ENCODER.encode(`"${position}":`);
}

/** Whether `a` equals `chunk` from `start` to `end`. */
export function equalAt(a: Uint8Array, chunk: Uint8Array, start: number, end: number): boolean {
  if (a.length !== end - start) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== chunk[start + i]) return false;
  return true;
}

/** The first position of `keys` holding a key that an earlier one holds; Infinity if none. */
export function firstRepeat(keys: readonly string[]): number {
  const seen = new Set<string>();
  for (let i = 0; i < keys.length; i++) {
    if (seen.has(keys[i]!)) return i;
    seen.add(keys[i]!);
  }
  return Infinity;
}
