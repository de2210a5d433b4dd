/**
 * The read grammar of `shared/record_filters.ts` in DuckDB's dialect: its casts and type
 * names, `like` in time linear in the text, and value checks by TRY_CAST in one statement. A
 * statement built from these runs {@link checkFilterValues} first, so that a value its
 * column's type cannot take is a 400 naming the column rather than an engine error.
 *
 * @module
 */

import { likeRegex } from "./patterns.ts";
import type { DuckDBValue } from "@duckdb/node-api";
import type { Filter } from "../../catalog/filters.ts";
import type { Table } from "../../catalog/model.ts";
import { orderBy, selectedColumns, type ValueCheck } from "../shared/record_terms.ts";
import * as grammar from "../shared/record_filters.ts";
import type { Session } from "./database.ts";

export { orderBy, selectedColumns, type ValueCheck };

/** The values of one DuckDB statement, each bound as `$1`, `$2`, … in the order added. */
export class BoundValues extends grammar.BoundValues<DuckDBValue> {}

/** One key of a total order on DuckDB: a quoted column, or `rowid` (the insertion position). */
export type SortKey = grammar.SortKey;

/** DuckDB's spelling of the read grammar. */
export const DUCKDB: grammar.FilterDialect<Session, BoundValues> = {
  boolean: "BOOLEAN",
  binary: "BLOB",
  text: "VARCHAR",
  isText: (type) => type === "VARCHAR",
  cast: (sql, type) => `CAST(${sql} AS ${type})`,
  fromBase64: (sql) => `from_base64(${sql})`,
  unordered: () => false,
  signedIntegers: { TINYINT: 8, SMALLINT: 16, INTEGER: 32, BIGINT: 64, HUGEINT: 128 },
  unsignedIntegers: { UTINYINT: 8, USMALLINT: 16, UINTEGER: 32, UBIGINT: 64, UHUGEINT: 128 },
  // A statement without bound values is one call to DuckDB rather than prepare, bind and run,
  // and a key `eq` read is the commonest filtered read.
  inlinesIntegers: true,
  hiddenColumns: false,
  insertion: { sql: "rowid", type: "BIGINT" },
  inList: (left, type, items, bound) =>
    `${left} IN (${items.map((v) => grammar.filterValue(DUCKDB, type, v, bound)).join(", ")})`,
  patternMatch: (ref, type, op, pattern, bound) =>
    patternMatch(type === "VARCHAR" ? ref : `CAST(${ref} AS VARCHAR)`, op, pattern, bound),
  // One statement, which names the first text that does not convert.
  async firstFailure(session, checks) {
    const bound = new BoundValues();
    const list = checks.map((c) => `${tryTyped(c.type, bound.add(c.text))} IS NULL`);
    const [row] = await session.rows(`SELECT [${list.join(", ")}] AS failed`, bound.values);
    return checks[((row?.failed ?? []) as boolean[]).findIndex((f) => f)];
  },
};

/** `placeholder` as `type`, NULL where it will not convert. */
function tryTyped(type: string, placeholder: string): string {
  if (type === "BLOB") return `try(from_base64(${placeholder}))`;
  return `TRY_CAST(${placeholder} AS ${type})`;
}

/**
 * The filters, all ANDed, as one SQL boolean expression, their values bound into `bound`.
 *
 * @throws {ApiError} 400 for a column the table lacks, or `is.true` on one not BOOLEAN.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BoundValues, filterCondition } from "./record_filters.ts";
 *
 * const table = {
 *   name: "t", schema: "public",
 *   columns: [
 *     { id: 1, name: "age", type: "INTEGER", default: null, is_nullable: true },
 *     { id: 2, name: "born", type: "DATE", default: null, is_nullable: true },
 *   ],
 *   constraints: { primary_key: null, unique: [], foreign_keys: [] },
 * };
 * const bound = new BoundValues();
 * const sql = filterCondition(table, [
 *   { column: "born", op: "gte", negated: false, value: "1990-01-01" },
 *   { column: "age", op: "in", negated: true, value: ["20", "030"] },
 * ], bound);
 * // Plain integers are written as literals; every other value is bound.
 * assert.equal(
 *   sql,
 *   '("born" >= CAST($1 AS DATE)) AND (NOT ("age" IN (CAST(20 AS INTEGER), CAST(30 AS INTEGER))))',
 * );
 * assert.deepEqual(bound.values, ["1990-01-01"]);
 * ```
 */
export function filterCondition(
  table: Table,
  filters: readonly Filter[],
  bound: BoundValues,
): string {
  return grammar.filterCondition(DUCKDB, table, filters, bound);
}

/**
 * `text` matched against a `like` or `ilike` filter's pattern (`%` any text, `_` one
 * character), in time linear in the text: a pattern of one piece as an equality, prefix,
 * suffix or contains test (of both sides in lower case for ilike), anything else as an RE2
 * regular expression (patterns.ts): with the pattern bound, DuckDB's LIKE backtracks, and
 * `ilike.*a*a*a*b` over one value of 400 characters took 10 s.
 */
function patternMatch(
  text: string,
  op: "like" | "ilike",
  pattern: string,
  bound: BoundValues,
): string {
  if (!pattern.includes("_")) {
    // ilike folds both sides to lower case, as DuckDB's ILIKE does.
    const [subject, value] = op === "like"
      ? [text, (v: string) => bound.add(v)]
      : [`lower(${text})`, (v: string) => `lower(${bound.add(v)})`];
    const pieces = pattern.split("%");
    if (pieces.length === 1) return `${subject} = ${value(pattern)}`;
    const inner = pieces.slice(1, -1);
    const [head, tail] = [pieces[0]!, pieces.at(-1)!];
    if (inner.length === 0 && tail === "") return `starts_with(${subject}, ${value(head)})`;
    if (inner.length === 0 && head === "") return `ends_with(${subject}, ${value(tail)})`;
    if (inner.length === 1 && head === "" && tail === "") {
      return `contains(${subject}, ${value(inner[0]!)})`;
    }
  }
  const regex = bound.add(likeRegex(pattern));
  return op === "like"
    ? `regexp_full_match(${text}, ${regex}, 's')`
    : `regexp_full_match(lower(${text}), lower(${regex}), 's')`;
}

/**
 * Checks that every value of `filters` converts to its column's type.
 *
 * @throws {ApiError} 400 naming the column and quoting the first value that does not convert.
 */
export async function checkFilterValues(
  session: Session,
  table: Table,
  filters: readonly Filter[],
): Promise<void> {
  await checkValues(session, grammar.filterValueChecks(DUCKDB, table, filters));
}

/**
 * Runs `checks` in one statement (none when every text {@link grammar.surelyConverts}).
 *
 * @throws {ApiError} 400 for the first text that does not convert, quoting it.
 */
export function checkValues(session: Session, checks: readonly ValueCheck[]): Promise<void> {
  return grammar.checkValues(DUCKDB, session, checks);
}

/**
 * The text a cursor keeps of a key's value, `expression` being the key in the statement: the
 * value as VARCHAR, which casts back to the same value (BLOB in base64, as filters take it).
 */
export function keyText(key: SortKey, expression: string): string {
  if (key.type === "BLOB") return `to_base64(${expression})`;
  if (key.type === "VARCHAR") return expression;
  return `CAST(${expression} AS VARCHAR)`;
}
