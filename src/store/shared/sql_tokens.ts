/**
 * A query's text cut into tokens as PostgreSQL's lexer cuts it (DuckDB's is PostgreSQL's), with
 * where each begins and ends: for the bracket depth both engines check before parsing
 * (query_bounds.ts), and for PostgreSQL's query_tables.ts, which splices the text around the
 * names of tables. Comments and
 * white space are skipped; strings (`'…'`, `E'…'`, `$tag$…$tag$`), quoted identifiers and
 * operators are one token each. Only the tokens around a table's name are ever read, and
 * whatever is spliced is parsed again and compared with the tree the guard checked, so a
 * token cut wrong here fails the query rather than changing it.
 *
 * @module
 */

/** One token: its kind, and where it is in the text (UTF-16 indices, end exclusive). */
export interface Token {
  /** `word` (a keyword or an unquoted name), `quoted` (a quoted name), or anything else. */
  readonly kind: "word" | "quoted" | "string" | "number" | "param" | "op" | "punct";
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

const SPACE = /[ \t\n\r\f\v]/;
const WORD_START = /[A-Za-z_\u0080-\uffff]/;
const WORD = /[A-Za-z0-9_$\u0080-\uffff]/;
const OPERATOR = /[+\-*/<>=~!@#%^&|`?]/;
const DOLLAR_TAG = /\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

/**
 * The tokens of `sql`, in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokenize } from "./sql_tokens.ts";
 *
 * const tokens = tokenize(`SELECT 'a''b' FROM "my table"--x`);
 * assert.deepEqual(tokens.map((t) => [t.kind, t.text]), [
 *   ["word", "SELECT"],
 *   ["string", "'a''b'"],
 *   ["word", "FROM"],
 *   ["quoted", '"my table"'],
 * ]);
 * ```
 */
export function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  const n = sql.length;
  let i = 0;
  const push = (kind: Token["kind"], start: number, end: number) => {
    tokens.push({ kind, start, end, text: sql.slice(start, end) });
    i = end;
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1] ?? "";
    if (SPACE.test(c)) i++;
    else if (c === "-" && next === "-") {
      const end = sql.indexOf("\n", i);
      i = end === -1 ? n : end + 1;
    } else if (c === "/" && next === "*") i = commentEnd(sql, i);
    else if (c === "'") push("string", i, quoteEnd(sql, i, "'", false));
    else if (c === '"') push("quoted", i, quoteEnd(sql, i, '"', false));
    else if (/[EeBbXxNn]/.test(c) && next === "'") {
      push("string", i, quoteEnd(sql, i + 1, "'", c === "E" || c === "e"));
    } else if (/[Uu]/.test(c) && next === "&" && /['"]/.test(sql[i + 2] ?? "")) {
      const quote = sql[i + 2]!;
      push(quote === "'" ? "string" : "quoted", i, quoteEnd(sql, i + 2, quote, false));
    } else if (WORD_START.test(c)) {
      let end = i + 1;
      while (end < n && WORD.test(sql[end]!)) end++;
      push("word", i, end);
    } else if (c === "$" && /[0-9]/.test(next)) {
      let end = i + 1;
      while (end < n && /[0-9]/.test(sql[end]!)) end++;
      push("param", i, end);
    } else if (c === "$" && dollarTag(sql, i) !== undefined) {
      const tag = dollarTag(sql, i)!;
      const close = sql.indexOf(tag, i + tag.length);
      push("string", i, close === -1 ? n : close + tag.length);
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(next))) {
      const number = /[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?/y;
      number.lastIndex = i;
      number.test(sql);
      push("number", i, Math.max(number.lastIndex, i + 1));
    } else if (OPERATOR.test(c)) {
      let end = i + 1;
      // An operator ends where a comment begins.
      while (
        end < n && OPERATOR.test(sql[end]!) && !/^(--|\/\*)/.test(sql.slice(end, end + 2))
      ) end++;
      push("op", i, end);
    } else push("punct", i, i + 1);
  }
  return tokens;
}

/** The index after the quote closing the one at `start`; a doubled quote stays inside. */
function quoteEnd(sql: string, start: number, quote: string, escapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i += escapes && sql[i] === "\\" ? 2 : 1;
  }
  return sql.length;
}

/** The index after the block comment at `start`: PostgreSQL nests them. */
function commentEnd(sql: string, start: number): number {
  let level = 0;
  let i = start;
  while (i < sql.length) {
    if (sql[i] === "/" && sql[i + 1] === "*") {
      level++;
      i += 2;
    } else if (sql[i] === "*" && sql[i + 1] === "/") {
      i += 2;
      if (--level === 0) return i;
    } else i++;
  }
  return sql.length;
}

/** The `$tag$` opening a dollar-quoted string at `i`, if one does. */
function dollarTag(sql: string, i: number): string | undefined {
  DOLLAR_TAG.lastIndex = i;
  return DOLLAR_TAG.exec(sql)?.[0];
}

/**
 * A function from a byte offset in the UTF-8 of `sql` (libpg_query's `location`) to the index
 * of the same character in `sql`, or -1 for an offset inside a character.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { indexOfByte } from "./sql_tokens.ts";
 *
 * const index = indexOfByte("SELECT 'é' FROM t");
 * assert.equal(index(17), 16);
 * ```
 */
export function indexOfByte(sql: string): (byte: number) => number {
  if (!/[^ -~\t\n\r\f\v]/.test(sql)) return (byte) => byte;
  const indices = new Map<number, number>();
  let byte = 0;
  for (let i = 0; i < sql.length; i++) {
    indices.set(byte, i);
    const code = sql.codePointAt(i)!;
    byte += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (code > 0xffff) i++;
  }
  indices.set(byte, sql.length);
  return (offset) => indices.get(offset) ?? -1;
}
