/**
 * Column type text: a strict grammar that every type must pass before it reaches SQL.
 *
 * Types cannot be bound as parameters, so a type is parsed here and re-rendered from its
 * parse tree; nothing of the request's text reaches SQL except words, numbers, and quoted
 * names and strings that are re-escaped. Whether the type exists is the storage engine's
 * call; this module only guarantees the text is a type expression and nothing more.
 *
 * @module
 */

/** A parsed column type. */
export interface ParsedType {
  /** The type re-rendered from its parse tree, safe to place where SQL expects a type. */
  readonly sql: string;
  /** For `serial` and friends: the integer type whose default draws from a sequence. */
  readonly serial?: "SMALLINT" | "INTEGER" | "BIGINT";
}

/** Longest type text accepted. */
export const MAX_TYPE_LENGTH = 1000;
const MAX_DEPTH = 16;

const SERIALS: Record<string, ParsedType["serial"]> = {
  smallserial: "SMALLINT",
  serial2: "SMALLINT",
  serial: "INTEGER",
  serial4: "INTEGER",
  bigserial: "BIGINT",
  serial8: "BIGINT",
};

/** Type names of more than one word; the first word starts a lookup here. */
const MULTI_WORD: readonly (readonly string[])[] = [
  ["double", "precision"],
  ["character", "varying"],
  ["char", "varying"],
  ["bit", "varying"],
  ["timestamp", "with", "time", "zone"],
  ["timestamp", "without", "time", "zone"],
  ["time", "with", "time", "zone"],
  ["time", "without", "time", "zone"],
];

type Token =
  | { kind: "word"; text: string }
  | { kind: "number"; text: string }
  | { kind: "quoted"; text: string }
  | { kind: "string"; text: string }
  | { kind: "punct"; text: string };

/** A type text that is not a type expression. */
export class TypeSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TypeSyntaxError";
  }
}

/**
 * Parses a column type, throwing {@link TypeSyntaxError} when the text is anything but a
 * type expression.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseType } from "./types.ts";
 *
 * assert.equal(parseType("numeric(10, 2)").sql, "NUMERIC(10, 2)");
 * assert.equal(parseType("timestamp with time zone").sql, "TIMESTAMP WITH TIME ZONE");
 * assert.equal(parseType("timestamp(3) without time zone").sql, "TIMESTAMP(3) WITHOUT TIME ZONE");
 * assert.equal(parseType("timestamp(3)").sql, "TIMESTAMP(3)");
 * assert.equal(parseType("bigserial").serial, "BIGINT");
 * assert.throws(() => parseType("int, evil varchar"));
 * ```
 */
export function parseType(text: string): ParsedType {
  if (text.length === 0) throw new TypeSyntaxError("is empty");
  if (text.length > MAX_TYPE_LENGTH) {
    throw new TypeSyntaxError(`is longer than ${MAX_TYPE_LENGTH} characters`);
  }
  const tokens = tokenize(text);
  const parser = new Parser(tokens);
  const single = tokens.length === 1 && tokens[0]!.kind === "word"
    ? SERIALS[tokens[0]!.text.toLowerCase()]
    : undefined;
  if (single) return { sql: single, serial: single };
  const sql = parser.type(0);
  parser.end();
  return { sql };
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const space = /^[ \t]+/.exec(rest);
    if (space) {
      i += space[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
    if (word) {
      tokens.push({ kind: "word", text: word[0] });
      i += word[0].length;
      continue;
    }
    const number = /^\d{1,9}/.exec(rest);
    if (number) {
      if (/^\d/.test(rest.slice(number[0].length))) {
        throw new TypeSyntaxError("has a number too large");
      }
      tokens.push({ kind: "number", text: String(Number(number[0])) });
      i += number[0].length;
      continue;
    }
    const quote = rest[0];
    if (quote === '"' || quote === "'") {
      const body = readQuoted(rest, quote);
      tokens.push({ kind: quote === '"' ? "quoted" : "string", text: body.value });
      i += body.length;
      continue;
    }
    if ("(),[]".includes(rest[0]!)) {
      tokens.push({ kind: "punct", text: rest[0]! });
      i += 1;
      continue;
    }
    throw new TypeSyntaxError(`has an unexpected character "${rest[0]}"`);
  }
  return tokens;
}

function readQuoted(text: string, quote: string): { value: string; length: number } {
  let value = "";
  let i = 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === quote) {
      if (text[i + 1] === quote) {
        value += quote;
        i += 2;
        continue;
      }
      if (/[\p{C}]/u.test(value) || value.length === 0) {
        throw new TypeSyntaxError("has an empty or unprintable quoted name");
      }
      return { value, length: i + 1 };
    }
    value += c;
    i += 1;
  }
  throw new TypeSyntaxError("has an unterminated quote");
}

class Parser {
  #at = 0;
  constructor(private readonly tokens: readonly Token[]) {}

  type(depth: number): string {
    if (depth > MAX_DEPTH) throw new TypeSyntaxError("is nested too deeply");
    let sql = this.simple(depth);
    while (this.peekPunct("[")) {
      this.#at++;
      const size = this.peek()?.kind === "number" ? this.next().text : "";
      this.expectPunct("]");
      sql += `[${size}]`;
    }
    return sql;
  }

  end(): void {
    const token = this.peek();
    if (token) throw new TypeSyntaxError(`has unexpected text at "${token.text}"`);
  }

  private simple(depth: number): string {
    const first = this.next();
    if (first.kind !== "word") throw new TypeSyntaxError(`expects a type name at "${first.text}"`);
    const lower = first.text.toLowerCase();
    if (lower === "struct" || lower === "union") return this.fields(lower.toUpperCase(), depth);
    if (lower === "map") {
      this.expectPunct("(");
      const key = this.type(depth + 1);
      this.expectPunct(",");
      const value = this.type(depth + 1);
      this.expectPunct(")");
      return `MAP(${key}, ${value})`;
    }
    if (lower === "enum") return this.enumeration();
    const words = [first.text];
    for (const candidate of MULTI_WORD) {
      if (candidate[0] !== lower) continue;
      const ahead = this.tokens.slice(this.#at, this.#at + candidate.length - 1);
      if (ahead.every((t, k) => t.kind === "word" && t.text.toLowerCase() === candidate[k + 1])) {
        words.push(...ahead.map((t) => t.text));
        this.#at += ahead.length;
        break;
      }
    }
    let sql = words.join(" ").toUpperCase();
    if (this.peekPunct("(")) {
      this.#at++;
      const args = [this.number()];
      while (this.peekPunct(",")) {
        this.#at++;
        args.push(this.number());
      }
      this.expectPunct(")");
      sql += `(${args.join(", ")})`;
      // PostgreSQL writes a precision before the zone: `timestamp(3) without time zone`.
      if (words.length === 1 && (lower === "timestamp" || lower === "time")) {
        for (const zone of [["with", "time", "zone"], ["without", "time", "zone"]]) {
          const ahead = this.tokens.slice(this.#at, this.#at + zone.length);
          const matches = ahead.length === zone.length &&
            ahead.every((t, k) => t.kind === "word" && t.text.toLowerCase() === zone[k]);
          if (matches) {
            sql += ` ${zone.join(" ").toUpperCase()}`;
            this.#at += zone.length;
            break;
          }
        }
      }
    }
    return sql;
  }

  private fields(kind: string, depth: number): string {
    this.expectPunct("(");
    const parts: string[] = [];
    do {
      const name = this.next();
      if (name.kind !== "word" && name.kind !== "quoted") {
        throw new TypeSyntaxError(`expects a field name at "${name.text}"`);
      }
      parts.push(`${quoteName(name.text)} ${this.type(depth + 1)}`);
    } while (this.peekPunct(",") && ++this.#at);
    this.expectPunct(")");
    return `${kind}(${parts.join(", ")})`;
  }

  private enumeration(): string {
    this.expectPunct("(");
    const values: string[] = [];
    do {
      const value = this.next();
      if (value.kind !== "string") throw new TypeSyntaxError("expects quoted ENUM values");
      values.push(`'${value.text.replaceAll("'", "''")}'`);
    } while (this.peekPunct(",") && ++this.#at);
    this.expectPunct(")");
    return `ENUM(${values.join(", ")})`;
  }

  private number(): string {
    const token = this.next();
    if (token.kind !== "number") throw new TypeSyntaxError(`expects a number at "${token.text}"`);
    return token.text;
  }

  private peek(): Token | undefined {
    return this.tokens[this.#at];
  }

  private peekPunct(text: string): boolean {
    const token = this.peek();
    return token?.kind === "punct" && token.text === text;
  }

  private next(): Token {
    const token = this.tokens[this.#at++];
    if (!token) throw new TypeSyntaxError("ends too early");
    return token;
  }

  private expectPunct(text: string): void {
    const token = this.next();
    if (token.kind !== "punct" || token.text !== text) {
      throw new TypeSyntaxError(`expects "${text}" at "${token.text}"`);
    }
  }
}

function quoteName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
