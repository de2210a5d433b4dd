/**
 * LIKE, ILIKE and GLOB patterns as RE2 regular expressions. DuckDB matches a pattern it cannot
 * turn into a prefix, suffix or contains test with a backtracking matcher whose cost grows
 * with the string's length to the power of the pattern's wildcards, and which does not look at
 * its deadline: `repeat('a', 100000) LIKE $1` with `%a%b` ran past 10 s on one row, GLOB
 * `*a*a*a*a*a*b` over 3,000 characters past 20 s. RE2 (`regexp_full_match`) matches in time
 * linear in the string, so a pattern that is not a plain one runs as the regular expression
 * these functions give. GLOB's `?` matches one character (DuckDB's own matcher takes a byte).
 *
 * @module
 */

/** A regular expression matching nothing, for patterns that can match nothing. */
const NEVER = "[^\\x00-\\x{10FFFF}]";

/** `ch` as an RE2 literal: every ASCII character but letters, digits and `_` escaped. */
function literal(ch: string): string {
  if (ch === "\u0000") return "\\x00";
  return ch.charCodeAt(0) < 0x80 && !/[A-Za-z0-9_]/.test(ch) ? `\\${ch}` : ch;
}

/** Whether a LIKE pattern needs RE2: it has `_`, or it is escaped. */
export function needsRegex(pattern: string, escape = ""): boolean {
  return escape !== "" || pattern.includes("_");
}

/**
 * A LIKE pattern (`%` any text, `_` one character, `escape` before a character keeping it
 * literal) as an RE2 expression for `regexp_full_match` with the `s` option.
 *
 * @throws {Error} when the pattern ends with its escape character, as DuckDB does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { likeRegex } from "./patterns.ts";
 *
 * assert.equal(likeRegex("a%b_c."), "a.*b.c\\.");
 * assert.equal(likeRegex("100!%", "!"), "100\\%");
 * ```
 */
export function likeRegex(pattern: string, escape = ""): string {
  let out = "";
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!;
    if (escape !== "" && ch === escape) {
      const next = chars[++i];
      if (next === undefined) throw new Error("Like pattern must not end with escape character");
      out += literal(next);
    } else if (ch === "%") {
      if (!out.endsWith(".*")) out += ".*";
    } else if (ch === "_") out += ".";
    else out += literal(ch);
  }
  return out;
}

/**
 * A GLOB pattern (`*` any text, `?` one character, `[abc]`, `[a-z]` and `[!…]` one of a set
 * or not, `\` before a character keeping it literal) as an RE2 expression, with DuckDB's
 * reading of the odd cases: a pattern ending in `\` or inside an unclosed `[` matches nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { globRegex } from "./patterns.ts";
 *
 * assert.equal(globRegex("*.c?v"), ".*\\.c.v");
 * assert.equal(globRegex("[!a-c]x"), "[^a-c]x");
 * ```
 */
export function globRegex(pattern: string): string {
  const chars = [...pattern];
  let out = "";
  let i = 0;
  while (i < chars.length) {
    const ch = chars[i]!;
    if (ch === "*") {
      if (!out.endsWith(".*")) out += ".*";
      i++;
    } else if (ch === "?") {
      out += ".";
      i++;
    } else if (ch === "\\") {
      const next = chars[i + 1];
      if (next === undefined) return NEVER;
      out += literal(next);
      i += 2;
    } else if (ch === "[") {
      const set = bracket(chars, i + 1);
      if (set === undefined) return NEVER;
      out += set.regex;
      i = set.end;
    } else {
      out += literal(ch);
      i++;
    }
  }
  return out;
}

/** A GLOB bracket expression from `start` (after `[`) as an RE2 class, and where it ends. */
function bracket(chars: string[], start: number): { regex: string; end: number } | undefined {
  let i = start;
  const invert = chars[i] === "!";
  if (invert) i++;
  const first = i;
  const items: string[] = [];
  while (i < chars.length) {
    const ch = chars[i]!;
    if (ch === "]" && i > first) {
      if (items.length === 0) return { regex: invert ? "." : NEVER, end: i + 1 };
      return { regex: `[${invert ? "^" : ""}${items.join("")}]`, end: i + 1 };
    }
    if (i + 1 === chars.length) return undefined;
    if (chars[i + 1] === "-") {
      const high = chars[i + 2];
      if (high === undefined) return undefined;
      // A range running backwards holds nothing, as in DuckDB; RE2 would refuse it.
      if (ch.codePointAt(0)! <= high.codePointAt(0)!) {
        items.push(`${classChar(ch)}-${classChar(high)}`);
      }
      i += 3;
    } else {
      items.push(classChar(ch));
      i++;
    }
  }
  return undefined;
}

function classChar(ch: string): string {
  return /[\\\]\[^-]/.test(ch) ? `\\${ch}` : ch;
}
