/**
 * The parsed read grammar of `src/catalog/filters.ts` as PostgreSQL SQL over one table:
 * filters as a boolean expression whose values are bound (`$n`, never written into the
 * text) and cast to their column's type, the selected columns, and the sort keys of an
 * ORDER BY made total by a tiebreaker. {@link recordsSelect} puts them together for any
 * code that reads records (pages, summaries, exports).
 *
 * A value cast at a `$n::type` placeholder is converted when the statement is bound, so a
 * value its type cannot take fails the statement whatever rows there are; run
 * {@link checkValues} first, in the same transaction, to make that a 400 naming the column.
 *
 * @module
 */

import type { Filter, OrderTerm, ReadQuery } from "../../catalog/filters.ts";
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
import { type Param, probing, type Session } from "./database.ts";
import { INSERTION_COLUMN } from "./ddl.ts";
import { qualified, quoteIdent } from "./sql.ts";

export { orderBy, selectedColumns, type ValueCheck };

/**
 * Binds `value` as the next parameter of a statement whose values are `params`, and returns
 * its placeholder.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bind } from "./record_filters.ts";
 *
 * const params: unknown[] = ["a"];
 * assert.equal(bind(params, "b"), "$2");
 * assert.deepEqual(params, ["a", "b"]);
 * ```
 */
export function bind(params: unknown[], value: Param): string {
  params.push(value);
  return `$${params.length}`;
}

/** Types compared as text: a filter value needs no cast, nor a check. */
const TEXT = /^(text|character varying(\(\d+\))?|character(\(\d+\))?|bpchar)$/;

/** Whether values of `type` are text, compared without a cast. */
export function textType(type: string): boolean {
  return TEXT.test(type);
}

/**
 * `placeholder`, bound as text, as a value of `type`: text types as they are (the operator
 * gives the parameter the column's type), bytea from base64 as records show it, anything
 * else cast.
 */
export function typedValue(type: string, placeholder: string): string {
  if (textType(type)) return placeholder;
  if (type === "bytea") return `decode(${placeholder}, 'base64')`;
  return `${placeholder}::${type}`;
}

/**
 * Whether PostgreSQL has no equality or order for `type`: json and arrays of it, which
 * filters, sort keys and summaries compare by their text.
 */
export function unordered(type: string): boolean {
  return /^json(\[\])*$/.test(type);
}

/** `column` as its filters and sort keys compare it: json (which has no order) as text. */
function compared(column: Column, ref: string): { sql: string; type: string } {
  return unordered(column.type)
    ? { sql: `${ref}::text`, type: "text" }
    : { sql: ref, type: column.type };
}

const COMPARISONS = { eq: "=", neq: "<>", gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

/**
 * The filters, all ANDed, as one SQL boolean expression over the table's columns (quoted,
 * qualified by `alias` when given), their values bound into `params`; `TRUE` when there are
 * none. `like` and `ilike` take `*` for `%` and compare the column's text; `in` binds its
 * list as one array; `is.true`/`is.false` apply to boolean columns only. A comparison with
 * NULL is not true, negated or not (SQL's rule, and PostgREST's).
 *
 * @throws {ApiError} 400 for a filter naming a column the table lacks, or `is.true`/`is.false`
 * on a column that is not boolean.
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
  if (filters.length === 0) return "TRUE";
  return filters.map((f) => `(${oneFilter(table, f, params, alias)})`).join(" AND ");
}

function oneFilter(table: Table, filter: Filter, params: unknown[], alias?: string): string {
  const column = columnOf(table, filter.column);
  const ref = alias ? `${alias}.${quoteIdent(column.name)}` : quoteIdent(column.name);
  const { op, value, negated } = filter;
  if (op === "is") {
    if (value !== null && column.type !== "boolean") {
      throw ApiError.badRequest(
        `Filter on column "${printable(column.name)}" has is.${value}, which applies only to ` +
          `boolean columns; this one is ${column.type}`,
      );
    }
    const word = value === null ? "NULL" : value ? "TRUE" : "FALSE";
    return `${ref} IS ${negated ? "NOT " : ""}${word}`;
  }
  const { sql: left, type } = compared(column, ref);
  if (filterTexts(filter).some((text) => text.includes("\u0000"))) {
    throw ApiError.badRequest(
      `Filter on column "${printable(column.name)}" has a NUL character (\\u0000), which no ` +
        "PostgreSQL text holds",
    );
  }
  let sql: string;
  if (op === "in") {
    const items = value as readonly string[];
    // One array for the whole list: one parameter, and one plan whatever its length.
    if (items.length === 0) sql = "FALSE";
    else if (type === "bytea") {
      sql = `${left} IN (SELECT decode(" v", 'base64') FROM unnest(${
        bind(params, items)
      }::text[]) AS " l"(" v"))`;
    } else if (type.endsWith("[]")) {
      // An array of arrays is one array of more dimensions to PostgreSQL: each item is cast,
      // without a length, which would cut it ({abcd} would match a varchar(3)[]'s {abc}).
      const unlimited = type.replace(/^character varying\(\d+\)/, "character varying")
        .replace(/^character\(\d+\)/, "bpchar");
      sql = `${left} IN (SELECT " v"::${unlimited} FROM unnest(${
        bind(params, items)
      }::text[]) AS " l"(" v"))`;
    } else {
      sql = `${left} = ANY (${bind(params, items)}::${textType(type) ? "text" : type}[])`;
    }
  } else if (op === "like" || op === "ilike") {
    const pattern = bind(params, (value as string).replaceAll("*", "%"));
    // No escape character, as on DuckDB: a backslash is itself, also as the last character.
    sql = `${ref}::text ${op === "like" ? "LIKE" : "ILIKE"} ${pattern} ESCAPE ''`;
  } else {
    sql = `${left} ${COMPARISONS[op]} ${typedValue(type, bind(params, value as string))}`;
  }
  return negated ? `NOT (${sql})` : sql;
}

/** The checks the values of `filters` need before a statement binds them. */
export function filterValueChecks(table: Table, filters: readonly Filter[]): ValueCheck[] {
  const checks: ValueCheck[] = [];
  for (const filter of filters) {
    if (filter.op === "is" || filter.op === "like" || filter.op === "ilike") continue;
    const column = columnOf(table, filter.column);
    const { type } = compared(column, "");
    const what = `Filter on column "${printable(column.name)}"`;
    for (const text of filterTexts(filter)) checks.push({ type, text, what });
  }
  return checks;
}

/** The texts a filter other than `is` compares with: its value, or its `in` list's items. */
function filterTexts(filter: Filter): readonly string[] {
  return typeof filter.value === "string" ? [filter.value] : filter.value as readonly string[];
}

/** The ranges of PostgreSQL's integer types, for {@link surelyConverts}. */
const INTEGER_RANGES: Readonly<Record<string, readonly [bigint, bigint]>> = {
  smallint: [-(2n ** 15n), 2n ** 15n - 1n],
  integer: [-(2n ** 31n), 2n ** 31n - 1n],
  bigint: [-(2n ** 63n), 2n ** 63n - 1n],
};

/**
 * Whether `check`'s text is certain to convert without asking PostgreSQL: text for a text
 * type, or plain decimal digits within an integer type's range. The commonest filter, a key
 * `eq`, then costs no check.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { surelyConverts } from "./record_filters.ts";
 *
 * assert.equal(surelyConverts({ type: "smallint", text: "-32768", what: "" }), true);
 * assert.equal(surelyConverts({ type: "smallint", text: "32768", what: "" }), false);
 * ```
 */
export function surelyConverts(check: ValueCheck): boolean {
  if (textType(check.type)) return true;
  const range = INTEGER_RANGES[check.type];
  if (!range || !/^-?[0-9]{1,40}$/.test(check.text)) return false;
  const value = BigInt(check.text);
  return value >= range[0] && value <= range[1];
}

/**
 * Checks that every text of `checks` converts to its type: one statement, under a savepoint
 * (a failed cast aborts a transaction), none when every text {@link surelyConverts}. Run it
 * inside a transaction.
 *
 * @throws {ApiError} 400 for the first text that does not convert, naming what `what` says
 * and quoting the text.
 */
export async function checkValues(session: Session, checks: readonly ValueCheck[]): Promise<void> {
  const needed = checks.filter((c) => !surelyConverts(c));
  if (needed.length === 0) return;
  if (await converts(session, needed)) return;
  // Which one: each on its own, in order; the caller's transaction is rolled back anyway.
  for (const check of needed) {
    if (await converts(session, [check])) continue;
    throw ApiError.badRequest(
      `${check.what} has "${
        printable(check.text)
      }", which is not a value of its type ${check.type}`,
    );
  }
}

/** Whether every text of `checks` converts, asked in one statement under a savepoint. */
function converts(session: Session, checks: readonly ValueCheck[]): Promise<boolean> {
  const params: unknown[] = [];
  const list = checks.map((c) => typedValue(c.type, bind(params, c.text))).join(", ");
  return evaluates(session, `SELECT ${list}`, params);
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

/**
 * One key of a total order on PostgreSQL: its `sql` over the unqualified table, with the
 * type of its values (the column absent for the hidden insertion order).
 */
export interface SortKey extends OrderKey {
  /** The PostgreSQL type of the expression's values. */
  readonly type: string;
}

/**
 * The keys of `order`, then the tiebreaker that makes the order total: the primary key's
 * columns not already in it, else (no primary key) the table's hidden insertion order
 * ({@link INSERTION_COLUMN}). Without `order`, that is the default record order: primary
 * key, else insertion. Nulls go last ascending and first descending unless a term says
 * otherwise (PostgreSQL's default, made explicit). A json column sorts by its text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { orderBy, sortKeys } from "./record_filters.ts";
 *
 * const table = {
 *   name: "t", schema: "public",
 *   columns: [
 *     { id: 1, name: "id", type: "integer", default: null, is_nullable: false },
 *     { id: 2, name: "age", type: "integer", default: null, is_nullable: true },
 *   ],
 *   constraints: { primary_key: { name: "pk", columns: ["id"] }, unique: [], foreign_keys: [] },
 * };
 * const keys = sortKeys(table, [{ column: "age", direction: "desc" }]);
 * assert.equal(orderBy(keys), '"age" DESC NULLS FIRST, "id" ASC NULLS LAST');
 * ```
 */
export function sortKeys(table: Table, order: readonly OrderTerm[]): SortKey[] {
  const key = (column: Column, direction: "asc" | "desc", nulls: "first" | "last") => ({
    ...compared(column, quoteIdent(column.name)),
    column,
    direction,
    nulls,
  });
  const keys: SortKey[] = order.map((term) =>
    key(
      columnOf(table, term.column),
      term.direction,
      term.nulls ?? (term.direction === "asc" ? "last" : "first"),
    )
  );
  const pk = table.constraints.primary_key;
  if (!pk) {
    return [...keys, {
      sql: quoteIdent(INSERTION_COLUMN),
      type: "bigint",
      direction: "asc",
      nulls: "last",
    }];
  }
  for (const name of pk.columns) {
    if (order.some((t) => t.column === name)) continue;
    keys.push(key(columnOf(table, name), "asc", "last"));
  }
  return keys;
}

/**
 * The SELECT of a records read, for any code that reads records: `read`'s selected columns
 * (all by default, never the hidden insertion order), in table order, of the rows its
 * filters let through, in its order made total (see {@link sortKeys}; record order by
 * default). Filter values are bound into `params` after any already there; `read.count` does
 * not apply. Run {@link checkValues} over {@link filterValueChecks} of `read.filters` first,
 * in the same transaction, so a bad value is a 400 naming its column. `columns` are what the
 * statement returns, in order, for rendering (record_values.ts renders their values as pages
 * do).
 *
 * @throws {ApiError} 400 for a column the table lacks or `is.true` on a column not boolean.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { recordsSelect } from "./record_filters.ts";
 *
 * const table = {
 *   name: "t", schema: "s",
 *   columns: [
 *     { id: 1, name: "id", type: "integer", default: null, is_nullable: false },
 *     { id: 2, name: "name", type: "text", default: null, is_nullable: true },
 *   ],
 *   constraints: { primary_key: { name: "pk", columns: ["id"] }, unique: [], foreign_keys: [] },
 * };
 * const params: unknown[] = [];
 * const { sql } = recordsSelect(table, {
 *   select: ["name"],
 *   filters: [{ column: "id", op: "gt", negated: false, value: "2" }],
 *   order: [{ column: "name", direction: "desc" }],
 *   count: "exact",
 * }, params);
 * assert.equal(
 *   sql,
 *   'SELECT "name" FROM "s"."t" WHERE ("id" > $1::integer) ORDER BY "name" DESC NULLS FIRST, "id" ASC NULLS LAST',
 * );
 * assert.deepEqual(params, ["2"]);
 * ```
 */
export function recordsSelect(
  table: Table,
  read: ReadQuery,
  params: unknown[],
): { sql: string; columns: Column[] } {
  const columns = selectedColumns(table, read.select);
  const list = columns.map((c) => quoteIdent(c.name)).join(", ");
  const where = read.filters.length > 0
    ? ` WHERE ${filterCondition(table, read.filters, params)}`
    : "";
  const keys = sortKeys(table, read.order);
  return {
    sql: `SELECT ${list} FROM ${qualified(table.schema, table.name)}${where} ORDER BY ${
      orderBy(keys)
    }`,
    columns,
  };
}
