/**
 * The parsed read grammar of `src/catalog/filters.ts` as SQL over one table: filters as a
 * boolean expression whose values are bound (never written into the text) and cast to their
 * column's type, the selected columns, and the sort keys of an ORDER BY with the tiebreaker
 * that makes the order total.
 *
 * A statement built from these runs {@link checkFilterValues} first, so that a value its
 * column's type cannot take is a 400 naming the column rather than an engine error.
 *
 * @module
 */

import { likeRegex } from "./patterns.ts";
import type { DuckDBValue } from "@duckdb/node-api";
import type { Filter, OrderTerm } from "../../catalog/filters.ts";
import type { Column, Table } from "../../catalog/model.ts";
import { printable } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import {
  columnOf,
  orderBy,
  type OrderKey,
  selectedColumns,
  type ValueCheck,
} from "../shared/record_terms.ts";
import type { Session } from "./database.ts";
import { quoteIdent } from "./sql.ts";

export { orderBy, selectedColumns, type ValueCheck };

/**
 * The values of one statement, each bound as `$1`, `$2`, … in the order they were added,
 * wherever its placeholder lands in the text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BoundValues } from "./record_filters.ts";
 *
 * const bound = new BoundValues();
 * assert.equal(bound.add("a"), "$1");
 * assert.equal(bound.add(null), "$2");
 * assert.deepEqual(bound.values, ["a", null]);
 * ```
 */
export class BoundValues {
  readonly values: DuckDBValue[] = [];

  /** Binds `value` and returns its placeholder. */
  add(value: DuckDBValue): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** Types whose values compare as text: a filter value needs no cast, nor a check. */
const TEXT = new Set(["VARCHAR"]);

/**
 * `placeholder`, text bound, as a value of `column`'s type: cast, except text, and BLOB, which
 * travels in base64 in this API as in records.
 */
export function typedValue(column: Pick<Column, "type">, placeholder: string): string {
  if (TEXT.has(column.type)) return placeholder;
  if (column.type === "BLOB") return `from_base64(${placeholder})`;
  return `CAST(${placeholder} AS ${column.type})`;
}

/** `placeholder` as `column`'s type, NULL where it will not convert. */
function tryTyped(column: Pick<Column, "type">, placeholder: string): string {
  if (column.type === "BLOB") return `try(from_base64(${placeholder}))`;
  return `TRY_CAST(${placeholder} AS ${column.type})`;
}

const COMPARISONS = { eq: "=", neq: "<>", gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

/**
 * The filters, all ANDed, as one SQL boolean expression over the table's columns (unqualified
 * and quoted), their values bound into `bound`; `TRUE` when there are none. `like` and
 * `ilike` take `*` for `%` and compare the column's text; `is.true`/`is.false` apply to
 * BOOLEAN columns only. A comparison with NULL is not true, negated or not (SQL's rule, and
 * PostgREST's): `age=neq.3` and `age=not.eq.3` leave out rows whose age is null.
 *
 * @throws {ApiError} 400 for a filter naming a column the table lacks, or `is.true`/`is.false`
 * on a column that is not BOOLEAN.
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
  if (filters.length === 0) return "TRUE";
  return filters.map((f) => `(${oneFilter(table, f, bound)})`).join(" AND ");
}

function oneFilter(table: Table, filter: Filter, bound: BoundValues): string {
  const column = columnOf(table, filter.column);
  const name = quoteIdent(column.name);
  const { op, value, negated } = filter;
  if (op === "is") {
    if (value !== null && column.type !== "BOOLEAN") {
      throw ApiError.badRequest(
        `Filter on column "${printable(column.name)}" has is.${value}, which applies only to ` +
          `BOOLEAN columns; this one is ${column.type}`,
      );
    }
    const word = value === null ? "NULL" : value ? "TRUE" : "FALSE";
    return `${name} IS ${negated ? "NOT " : ""}${word}`;
  }
  let sql: string;
  if (op === "in") {
    const items = value as readonly string[];
    sql = items.length === 0
      ? "FALSE"
      : `${name} IN (${items.map((v) => filterValue(column, v, bound)).join(", ")})`;
  } else if (op === "like" || op === "ilike") {
    const text = TEXT.has(column.type) ? name : `CAST(${name} AS VARCHAR)`;
    sql = patternMatch(text, op, (value as string).replaceAll("*", "%"), bound);
  } else {
    sql = `${name} ${COMPARISONS[op]} ${filterValue(column, value as string, bound)}`;
  }
  return negated ? `NOT (${sql})` : sql;
}

/**
 * `text` matched against a `like` or `ilike` filter's pattern (`%` any text, `_` one
 * character), in time linear in the text: a pattern of one piece as an equality, prefix,
 * suffix or contains test (of both sides in lower case for ilike), anything else as an RE2
 * regular expression (patterns.ts): with
 * the pattern bound, DuckDB's LIKE backtracks, and `ilike.*a*a*a*b` over one value of 400
 * characters took 10 s.
 */
function patternMatch(text: string, op: "like" | "ilike", pattern: string, bound: BoundValues) {
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
 * A filter's value as SQL of its column's type: bound, except an integer {@link surelyConverts}
 * proves plain (digits within the type's range, nothing else), which is written as a literal.
 * A statement without bound values is one call to DuckDB rather than prepare, bind and run, and
 * a key `eq` read is the commonest filtered read.
 */
function filterValue(column: Column, text: string, bound: BoundValues): string {
  if (surelyConverts({ type: column.type, text, what: "" })) {
    return `CAST(${BigInt(text)} AS ${column.type})`;
  }
  return typedValue(column, bound.add(text));
}

/**
 * Checks that every value of `filters` converts to its column's type, in one statement (none
 * when no value needs converting).
 *
 * @throws {ApiError} 400 naming the column and quoting the first value that does not convert.
 */
export async function checkFilterValues(
  session: Session,
  table: Table,
  filters: readonly Filter[],
): Promise<void> {
  await checkValues(session, filterValueChecks(table, filters));
}

/** The checks {@link checkFilterValues} makes, to run with others in one statement. */
export function filterValueChecks(table: Table, filters: readonly Filter[]): ValueCheck[] {
  const checks: ValueCheck[] = [];
  for (const filter of filters) {
    if (filter.op === "is" || filter.op === "like" || filter.op === "ilike") continue;
    const column = columnOf(table, filter.column);
    if (TEXT.has(column.type)) continue;
    const what = `Filter on column "${printable(column.name)}"`;
    const texts = typeof filter.value === "string" ? [filter.value] : filter.value as string[];
    for (const text of texts) checks.push({ type: column.type, text, what });
  }
  return checks;
}

/**
 * Runs `checks` in one statement (none when there are none).
 *
 * @throws {ApiError} 400 for the first text that does not convert, quoting it.
 */
export async function checkValues(session: Session, checks: readonly ValueCheck[]): Promise<void> {
  const needed = checks.filter((c) => !TEXT.has(c.type) && !surelyConverts(c));
  if (needed.length === 0) return;
  const bound = new BoundValues();
  const list = needed.map((c) => `${tryTyped(c, bound.add(c.text))} IS NULL`);
  const [row] = await session.rows(`SELECT [${list.join(", ")}] AS failed`, bound.values);
  const failed = (row?.failed ?? []) as boolean[];
  const first = failed.findIndex((f) => f);
  if (first < 0) return;
  const { what, text, type } = needed[first]!;
  throw ApiError.badRequest(
    `${what} has "${printable(text)}", which is not a value of its type ${type}`,
  );
}

/** The ranges of DuckDB's integer types, for {@link surelyConverts}. */
const INTEGER_RANGES: Readonly<Record<string, readonly [bigint, bigint]>> = {
  TINYINT: [-(2n ** 7n), 2n ** 7n - 1n],
  SMALLINT: [-(2n ** 15n), 2n ** 15n - 1n],
  INTEGER: [-(2n ** 31n), 2n ** 31n - 1n],
  BIGINT: [-(2n ** 63n), 2n ** 63n - 1n],
  HUGEINT: [-(2n ** 127n), 2n ** 127n - 1n],
  UTINYINT: [0n, 2n ** 8n - 1n],
  USMALLINT: [0n, 2n ** 16n - 1n],
  UINTEGER: [0n, 2n ** 32n - 1n],
  UBIGINT: [0n, 2n ** 64n - 1n],
  UHUGEINT: [0n, 2n ** 128n - 1n],
};

/**
 * Whether `check`'s text is certain to convert without asking DuckDB: plain decimal digits
 * within an integer type's range (DuckDB takes leading zeros and `-0` too). The commonest
 * filter, a key `eq`, then costs one statement rather than two; anything else is checked.
 */
export function surelyConverts(check: ValueCheck): boolean {
  const range = INTEGER_RANGES[check.type];
  if (!range || !/^-?[0-9]{1,40}$/.test(check.text)) return false;
  const value = BigInt(check.text);
  return value >= range[0] && value <= range[1];
}

/**
 * One key of a total order on DuckDB: its `sql` a quoted column, or `rowid` (the insertion
 * position) where `column` is absent.
 */
export type SortKey = OrderKey;

/**
 * The keys of `order`, then the tiebreaker that makes the order total: the primary key's
 * columns not already in it, else (no primary key) the insertion position `rowid`. Without
 * `order`, that is today's default order: primary key, else insertion. Nulls go last
 * ascending and first descending unless a term says otherwise (PostgreSQL's default).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { orderBy, sortKeys } from "./record_filters.ts";
 *
 * const table = {
 *   name: "t", schema: "public",
 *   columns: [
 *     { id: 1, name: "id", type: "INTEGER", default: null, is_nullable: false },
 *     { id: 2, name: "age", type: "INTEGER", default: null, is_nullable: true },
 *   ],
 *   constraints: { primary_key: { name: "pk", columns: ["id"] }, unique: [], foreign_keys: [] },
 * };
 * const keys = sortKeys(table, [{ column: "age", direction: "desc" }]);
 * assert.equal(orderBy(keys), '"age" DESC NULLS FIRST, "id" ASC NULLS LAST');
 * ```
 */
export function sortKeys(table: Table, order: readonly OrderTerm[]): SortKey[] {
  const keys: SortKey[] = order.map((term) => {
    const column = columnOf(table, term.column);
    return {
      sql: quoteIdent(column.name),
      column,
      direction: term.direction,
      nulls: term.nulls ?? (term.direction === "asc" ? "last" : "first"),
    };
  });
  const pk = table.constraints.primary_key;
  if (!pk) return [...keys, { sql: "rowid", direction: "asc", nulls: "last" }];
  for (const name of pk.columns) {
    if (order.some((t) => t.column === name)) continue;
    const column = columnOf(table, name);
    keys.push({ sql: quoteIdent(column.name), column, direction: "asc", nulls: "last" });
  }
  return keys;
}
