/**
 * The read grammar of `shared/record_filters.ts` in PostgreSQL's dialect: its casts and type
 * names, json compared as text, an `in` list bound as one array, no NUL in text.
 *
 * A value cast at a `$n::type` placeholder is converted when the statement is bound, so a
 * value its type cannot take fails the statement whatever rows there are; run
 * {@link checkValues} first, in the same transaction, to make that a 400 naming the column.
 *
 * @module
 */

import type { Filter } from "../../catalog/filters.ts";
import type { Table } from "../../catalog/model.ts";
import { selectedColumns, type ValueCheck } from "../shared/record_terms.ts";
import * as grammar from "../shared/record_filters.ts";
import { type Param, probing, type Session } from "./database.ts";
import { INSERTION_COLUMN } from "./ddl.ts";
import { escapedLiteral, quoteIdent } from "./sql.ts";
import { ApiError } from "../../errors.ts";

export { selectedColumns, type ValueCheck };

/** The binder of PostgreSQL statements, over the array of their values. */
type Bound = grammar.BoundValues<unknown>;

/**
 * Binds `value` as the next parameter of a statement whose values are `params`: the shared
 * binder, for callers that hold the values as a plain array.
 */
export function bind(params: unknown[], value: Param): string {
  return new grammar.BoundValues(params).add(value);
}

/**
 * A binder that writes each value into the statement as an escaped literal, typed as a bound
 * parameter is (unknown until its context gives it a type); a list as an array literal. Its
 * statement is text, which can go in one round trip with others (`Session.runAndCommit`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LiteralValues } from "./record_filters.ts";
 *
 * const bound = new LiteralValues();
 * assert.equal(bound.add("it's"), "E'it''s'");
 * assert.equal(bound.add(["a", 'b"']), String.raw`E'{"a","b\\""}'`);
 * assert.deepEqual(bound.values, []);
 * ```
 *
 * @throws {ApiError} 400 for a value with a NUL character, which PostgreSQL's text cannot hold.
 */
export class LiteralValues extends grammar.BoundValues<Param> {
  override add(value: Param): string {
    const text = Array.isArray(value)
      ? `{${value.map((item) => `"${String(item).replace(/[\\"]/g, "\\$&")}"`).join(",")}}`
      : String(value);
    if (text.includes("\u0000")) {
      throw ApiError.badRequest(
        "A cursor value has a NUL character (\\u0000), which PostgreSQL text cannot hold",
      );
    }
    return escapedLiteral(text);
  }
}

/** Types compared as text: a filter value needs no cast, nor a check. */
const TEXT = /^(text|character varying(\(\d+\))?|character(\(\d+\))?|bpchar)$/;

/** Whether values of `type` are text, compared without a cast. */
export function textType(type: string): boolean {
  return TEXT.test(type);
}

/**
 * Whether PostgreSQL has no equality or order for `type`: json and arrays of it, which
 * filters, sort keys and summaries compare by their text.
 */
export function unordered(type: string): boolean {
  return /^json(\[\])*$/.test(type);
}

/** PostgreSQL's spelling of the read grammar. */
export const POSTGRES: grammar.FilterDialect<Session, Bound> = {
  boolean: "boolean",
  binary: "bytea",
  text: "text",
  isText: textType,
  cast: (sql, type) => `${sql}::${type}`,
  fromBase64: (sql) => `decode(${sql}, 'base64')`,
  unordered,
  signedIntegers: { smallint: 16, integer: 32, bigint: 64 },
  inlinesIntegers: false,
  refusesNul: "PostgreSQL",
  hiddenColumns: true,
  insertion: { sql: quoteIdent(INSERTION_COLUMN), type: "bigint" },
  inList,
  // No escape character, as on DuckDB: a backslash is itself, also as the last character.
  patternMatch: (ref, _type, op, pattern, bound) =>
    `${ref}::text ${op === "like" ? "LIKE" : "ILIKE"} ${bound.add(pattern)} ESCAPE ''`,
  async firstFailure(session, checks) {
    if (await converts(session, checks)) return undefined;
    // Which one: each on its own, in order; the caller's transaction is rolled back anyway.
    for (const check of checks) if (!await converts(session, [check])) return check;
  },
};

/**
 * `left`, of `type`, in `items`: one array for the whole list, so one parameter and one plan
 * whatever its length.
 */
function inList(left: string, type: string, items: readonly string[], bound: Bound): string {
  if (type === "bytea") {
    return `${left} IN (SELECT decode(" v", 'base64') FROM unnest(${
      bound.add(items)
    }::text[]) AS " l"(" v"))`;
  }
  if (type.endsWith("[]")) {
    // An array of arrays is one array of more dimensions to PostgreSQL: each item is cast,
    // without a length, which would cut it ({abcd} would match a varchar(3)[]'s {abc}).
    const unlimited = type.replace(/^character varying\(\d+\)/, "character varying")
      .replace(/^character\(\d+\)/, "bpchar");
    return `${left} IN (SELECT " v"::${unlimited} FROM unnest(${
      bound.add(items)
    }::text[]) AS " l"(" v"))`;
  }
  return `${left} = ANY (${bound.add(items)}::${textType(type) ? "text" : type}[])`;
}

/**
 * `placeholder`, bound as text, as a value of `type`: text types as they are (the operator
 * gives the parameter the column's type), bytea from base64.
 */
export function typedValue(type: string, placeholder: string): string {
  return grammar.typedValue(POSTGRES, type, placeholder);
}

/**
 * The filters, all ANDed, as one SQL boolean expression over the columns (qualified by
 * `alias` when given), their values bound into `params` after any already there.
 *
 * @throws {ApiError} 400 for a column the table lacks, `is.true` on one not boolean, or NUL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { filterCondition } from "./record_filters.ts";
 *
 * const table = {
 *   name: "t", schema: "public",
 *   columns: [
 *     { id: 1, name: "age", type: "integer", default: null, is_nullable: true },
 *     { id: 2, name: "born", type: "date", default: null, is_nullable: true },
 *   ],
 *   constraints: { primary_key: null, unique: [], foreign_keys: [] },
 * };
 * const params: unknown[] = [];
 * const sql = filterCondition(table, [
 *   { column: "born", op: "gte", negated: false, value: "1990-01-01" },
 *   { column: "age", op: "in", negated: true, value: ["20", "30"] },
 * ], params);
 * assert.equal(sql, '("born" >= $1::date) AND (NOT ("age" = ANY ($2::integer[])))');
 * assert.deepEqual(params, ["1990-01-01", ["20", "30"]]);
 * ```
 */
export function filterCondition(
  table: Table,
  filters: readonly Filter[],
  params: unknown[],
  alias?: string,
): string {
  return grammar.filterCondition(POSTGRES, table, filters, new grammar.BoundValues(params), alias);
}

/** The checks the values of `filters` need before a statement binds them. */
export function filterValueChecks(table: Table, filters: readonly Filter[]): ValueCheck[] {
  return grammar.filterValueChecks(POSTGRES, table, filters);
}

/**
 * Checks that every text of `checks` converts to its type: one statement, under a savepoint
 * (a failed cast aborts a transaction), none when every text surely converts (plain text or
 * integers in range). Run it inside a transaction.
 *
 * @throws {ApiError} 400 for the first text that does not convert, naming what `what` says
 * and quoting the text.
 */
export function checkValues(session: Session, checks: readonly ValueCheck[]): Promise<void> {
  return grammar.checkValues(POSTGRES, session, checks);
}

/** Whether every text of `checks` converts, asked in one statement under a savepoint. */
function converts(session: Session, checks: readonly ValueCheck[]): Promise<boolean> {
  const bound = new grammar.BoundValues();
  const list = checks.map((c) => typedValue(c.type, bound.add(c.text))).join(", ");
  return evaluates(session, `SELECT ${list}`, bound.values);
}

/**
 * Whether `sql` runs without PostgreSQL refusing a value (SQLSTATE class 22: a text its type
 * cannot take, a number out of range, a bad date), in a savepoint (`probing`) so that a
 * refusal leaves the caller's transaction usable. Any other error is thrown.
 */
export async function evaluates(
  session: Session,
  sql: string,
  params: readonly unknown[],
): Promise<boolean> {
  try {
    await probing(session).rows(sql, params as Param[]);
    return true;
  } catch (error) {
    if (!conversionFailure(error)) throw error;
    return false;
  }
}

/** Whether `error` is PostgreSQL's refusal of a value its type cannot take (class 22). */
function conversionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && code.startsWith("22");
}

/** One key of a total order on PostgreSQL: its `sql` over the unqualified table. */
export type SortKey = grammar.SortKey;

/**
 * The text a cursor keeps of a key's value, `expression` being the key in the statement: its
 * text, which casts back to the same value (bytea in base64, as filters take it).
 */
export function keyText(key: SortKey, expression: string): string {
  if (key.type === "bytea") return `translate(encode(${expression}, 'base64'), E'\\n', '')`;
  return `${expression}::text`;
}
