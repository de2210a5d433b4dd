/**
 * A JSON object's members as their own text: the body of a records change
 * (`PATCH /table/{name}/records`), `{"column": value, …}`.
 *
 * Values are not parsed in JavaScript: each keeps the exact text the client sent, so an
 * integer beyond 2^53 or a decimal's last digit reaches the store as it was written.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import { badShape, malformed, MAX_DEPTH, tooDeep } from "./json_rows_errors.ts";

/** One member of an object: its key, and its value as the JSON text the body holds. */
export interface JsonMember {
  readonly key: string;
  readonly json: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;

/**
 * The members of the JSON object `text`, in order, each value as its own JSON text.
 *
 * @throws {ApiError} 400 when `text` is not valid JSON, is not an object, is nested deeper
 * than {@link MAX_DEPTH} levels, or gives a key more than once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { objectMembers } from "./json_object.ts";
 *
 * assert.deepEqual(objectMembers('{"id": 9007199254740993, "tags": ["a", {"b": 1}]}'), [
 *   { key: "id", json: "9007199254740993" },
 *   { key: "tags", json: '["a", {"b": 1}]' },
 * ]);
 * assert.throws(() => objectMembers('{"a": 1, "a": 2}'), /more than once/);
 * assert.throws(() => objectMembers("[1]"), /JSON object/);
 * ```
 */
export function objectMembers(text: string): JsonMember[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw malformed(error instanceof Error ? error.message : String(error));
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw badShape('it must be a JSON object of column values, such as {"price": 10}');
  }
  // The text is valid JSON and an object, so only strings and nesting need following.
  const members: JsonMember[] = [];
  const keys = new Set<string>();
  let depth = 0;
  let inString = false;
  let escaped = false;
  let keyDue = false;
  let keyStart = -1;
  let key = "";
  let valueStart = -1;
  const close = (end: number) => {
    if (keys.has(key)) {
      throw ApiError.badRequest(`The request body has the key "${key}" more than once`);
    }
    keys.add(key);
    members.push({ key, json: text.slice(valueStart, end).trim() });
    valueStart = -1;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === BACKSLASH) escaped = true;
      else if (c === QUOTE) {
        inString = false;
        if (keyStart >= 0) {
          key = JSON.parse(text.slice(keyStart, i + 1));
          keyStart = -1;
        }
      }
      continue;
    }
    if (c === QUOTE) {
      inString = true;
      if (depth === 1 && keyDue) {
        keyStart = i;
        keyDue = false;
      }
    } else if (c === LBRACE || c === LBRACKET) {
      if (++depth > MAX_DEPTH) throw tooDeep();
      if (depth === 1) keyDue = true;
    } else if (depth === 1 && c === COLON) {
      valueStart = i + 1;
    } else if (depth === 1 && c === COMMA) {
      close(i);
      keyDue = true;
    } else if (c === RBRACE || c === RBRACKET) {
      if (depth === 1 && valueStart >= 0) close(i);
      depth--;
    }
  }
  return members;
}
