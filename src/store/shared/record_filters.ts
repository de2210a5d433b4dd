/**
 * The parsed read grammar of `src/catalog/filters.ts` as SQL over one table, written once for
 * both engines: filters as a boolean expression whose values are bound (never written into
 * the text) and cast to their column's type, the checks that those values convert, and the
 * sort keys of an ORDER BY with the tiebreaker that makes the order total. Each engine's
 * `record_filters.ts` gives a {@link FilterDialect}: its casts, type names, how `in` binds its
 * list and how `like` matches, and how it asks whether texts convert.
 *
 * @module
 */

import type { Filter, OrderTerm } from "../../catalog/filters.ts";
import type { Column, Table } from "../../catalog/model.ts";
import { printable } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import { keysetCondition } from "./cursor.ts";
import { columnOf, type OrderKey, type ValueCheck } from "./record_terms.ts";
import { quoteIdent } from "./sql.ts";

/**
 * The values of one statement, each bound as `$1`, `$2`, … in the order they were added,
 * wherever its placeholder lands in the text; `values` may be an array that already holds
 * the statement's first values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BoundValues } from "./record_filters.ts";
 *
 * const bound = new BoundValues<string | null>(["a"]);
 * assert.equal(bound.add("b"), "$2");
 * assert.equal(bound.add(null), "$3");
 * assert.deepEqual(bound.values, ["a", "b", null]);
 * ```
 */
export class BoundValues<V = unknown> {
  constructor(readonly values: V[] = []) {}

  /** Binds `value` and returns its placeholder. */
  add(value: V): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** What the grammar binds: texts, whatever else an engine's binder takes. */
export interface Binder {
  add(value: string): string;
}

/** One key of a total order, with the type of its values on the engine. */
export interface SortKey extends OrderKey {
  /** The engine's type of the key's values. */
  readonly type: string;
}

/**
 * What an engine says of the read grammar: its type names and casts, and the few clauses it
 * writes its own way. `S` is its session, `B` its binder.
 */
export interface FilterDialect<S, B extends Binder> {
  /** The boolean type, the only one `is.true` and `is.false` apply to. */
  readonly boolean: string;
  /** The binary type, whose values filters and cursors give in base64. */
  readonly binary: string;
  /** The text type, which unordered values compare as. */
  readonly text: string;
  /** Whether values of `type` are text: compared without a cast, and sure to convert. */
  isText(type: string): boolean;
  /** `sql` cast to `type`. */
  cast(sql: string, type: string): string;
  /** `sql`, base64 text, as a binary value. */
  fromBase64(sql: string): string;
  /** Whether the engine has no equality or order for `type`, so its text is compared. */
  unordered(type: string): boolean;
  /** The bits of each signed integer type. */
  readonly signedIntegers: Readonly<Record<string, number>>;
  /** The bits of each unsigned integer type, if the engine has any. */
  readonly unsignedIntegers?: Readonly<Record<string, number>>;
  /**
   * Whether an integer sure to convert is written into the text as a literal: a statement
   * without bound values may cost the engine less than one with.
   */
  readonly inlinesIntegers: boolean;
  /** The engine's name when its text cannot hold NUL: a filter value with one is then a 400. */
  readonly refusesNul?: string;
  /** Whether a table has a column `*` selects but the API never shows. */
  readonly hiddenColumns: boolean;
  /** The hidden insertion order, the tiebreaker of a table without a primary key. */
  readonly insertion: { readonly sql: string; readonly type: string };
  /** `left` (of `type`) in the non-empty list `items`, bound into `bound`. */
  inList(left: string, type: string, items: readonly string[], bound: B): string;
  /** Column `ref` (of `type`) matched by a `like` or `ilike` pattern (`%` and `_`). */
  patternMatch(ref: string, type: string, op: "like" | "ilike", pattern: string, bound: B): string;
  /** The first of `checks` whose text does not convert, asked of the engine; else undefined. */
  firstFailure(session: S, checks: readonly ValueCheck[]): Promise<ValueCheck | undefined>;
}

/** Any engine's dialect, for the functions that use neither its session nor its binder. */
type AnyDialect = FilterDialect<never, never>;

const COMPARISONS = { eq: "=", neq: "<>", gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

/**
 * `placeholder`, bound as text, as a value of `type`: text as it is, the binary type from
 * base64 as records show it, anything else cast.
 */
export function typedValue(dialect: AnyDialect, type: string, placeholder: string): string {
  if (dialect.isText(type)) return placeholder;
  if (type === dialect.binary) return dialect.fromBase64(placeholder);
  return dialect.cast(placeholder, type);
}

/** `column` as filters and sort keys compare it: an unordered type by its text. */
function compared(dialect: AnyDialect, column: Column, ref: string): { sql: string; type: string } {
  return dialect.unordered(column.type)
    ? { sql: dialect.cast(ref, dialect.text), type: dialect.text }
    : { sql: ref, type: column.type };
}

/**
 * The filters, all ANDed, as one SQL boolean expression over the table's columns (quoted,
 * qualified by `alias` when given), their values bound into `bound`; `TRUE` when there are
 * none. `like` and `ilike` take `*` for `%` and compare the column's text; `is.true` and
 * `is.false` apply to boolean columns only. A comparison with NULL is not true, negated or
 * not (SQL's rule, and PostgREST's): `age=neq.3` and `age=not.eq.3` leave out rows whose age
 * is null.
 *
 * @throws {ApiError} 400 for a filter naming a column the table lacks, `is.true`/`is.false`
 * on a column that is not boolean, or a NUL where the engine's text holds none.
 */
export function filterCondition<B extends Binder>(
  dialect: FilterDialect<unknown, B>,
  table: Table,
  filters: readonly Filter[],
  bound: B,
  alias?: string,
): string {
  if (filters.length === 0) return "TRUE";
  return filters.map((f) => `(${oneFilter(dialect, table, f, bound, alias)})`).join(" AND ");
}

function oneFilter<B extends Binder>(
  dialect: FilterDialect<unknown, B>,
  table: Table,
  filter: Filter,
  bound: B,
  alias?: string,
): string {
  const column = columnOf(table, filter.column);
  const ref = alias ? `${alias}.${quoteIdent(column.name)}` : quoteIdent(column.name);
  const { op, value, negated } = filter;
  if (op === "is") {
    if (value !== null && column.type !== dialect.boolean) {
      throw ApiError.badRequest(
        `Filter on column "${printable(column.name)}" has is.${value}, which applies only to ` +
          `${dialect.boolean} columns; this one is ${column.type}`,
      );
    }
    const word = value === null ? "NULL" : value ? "TRUE" : "FALSE";
    return `${ref} IS ${negated ? "NOT " : ""}${word}`;
  }
  const { sql: left, type } = compared(dialect, column, ref);
  if (dialect.refusesNul && filterTexts(filter).some((text) => text.includes("\u0000"))) {
    throw ApiError.badRequest(
      `Filter on column "${printable(column.name)}" has a NUL character (\\u0000), which no ` +
        `${dialect.refusesNul} text holds`,
    );
  }
  let sql: string;
  if (op === "in") {
    const items = value as readonly string[];
    sql = items.length === 0 ? "FALSE" : dialect.inList(left, type, items, bound);
  } else if (op === "like" || op === "ilike") {
    sql = dialect.patternMatch(ref, column.type, op, (value as string).replaceAll("*", "%"), bound);
  } else {
    sql = `${left} ${COMPARISONS[op]} ${filterValue(dialect, type, value as string, bound)}`;
  }
  return negated ? `NOT (${sql})` : sql;
}

/** The texts a filter other than `is` compares with: its value, or its `in` list's items. */
function filterTexts(filter: Filter): readonly string[] {
  return typeof filter.value === "string" ? [filter.value] : filter.value as readonly string[];
}

/**
 * A filter's text as SQL of `type`: bound, unless the engine {@link FilterDialect.inlinesIntegers}
 * and the text is a plain integer of the type's range, which is then written as a literal.
 */
export function filterValue(
  dialect: AnyDialect,
  type: string,
  text: string,
  bound: Binder,
): string {
  if (dialect.inlinesIntegers && plainInteger(dialect, type, text)) {
    return dialect.cast(`${BigInt(text)}`, type);
  }
  return typedValue(dialect, type, bound.add(text));
}

/** The checks the values of `filters` need before a statement binds them. */
export function filterValueChecks(
  dialect: AnyDialect,
  table: Table,
  filters: readonly Filter[],
): ValueCheck[] {
  const checks: ValueCheck[] = [];
  for (const filter of filters) {
    if (filter.op === "is" || filter.op === "like" || filter.op === "ilike") continue;
    const column = columnOf(table, filter.column);
    const { type } = compared(dialect, column, "");
    const what = `Filter on column "${printable(column.name)}"`;
    for (const text of filterTexts(filter)) checks.push({ type, text, what });
  }
  return checks;
}

/** Whether `text` is plain decimal digits within the range of `type`, an integer type. */
function plainInteger(dialect: AnyDialect, type: string, text: string): boolean {
  const signed = dialect.signedIntegers[type];
  const unsigned = dialect.unsignedIntegers?.[type];
  if ((!signed && !unsigned) || !/^-?[0-9]{1,40}$/.test(text)) return false;
  const value = BigInt(text);
  const [least, beyond] = signed
    ? [-(2n ** BigInt(signed - 1)), 2n ** BigInt(signed - 1)]
    : [0n, 2n ** BigInt(unsigned!)];
  return value >= least && value < beyond;
}

/**
 * Whether `check`'s text is certain to convert without asking the engine: text for a text
 * type, or plain decimal digits within an integer type's range (leading zeros and `-0`
 * included). The commonest filter, a key `eq`, then costs no check.
 */
export function surelyConverts(dialect: AnyDialect, check: ValueCheck): boolean {
  return dialect.isText(check.type) || plainInteger(dialect, check.type, check.text);
}

/** The checks of `checks` only the engine can settle: those that do not {@link surelyConverts}. */
export function uncertainChecks(dialect: AnyDialect, checks: readonly ValueCheck[]): ValueCheck[] {
  return checks.filter((c) => !surelyConverts(dialect, c));
}

/**
 * Checks that every text of `checks` converts to its type, asking the engine only about
 * those that are not {@link surelyConverts} (nothing when none).
 *
 * @throws {ApiError} 400 for the first text that does not convert, naming what `what` says
 * and quoting the text.
 */
export async function checkValues<S>(
  dialect: FilterDialect<S, never>,
  session: S,
  checks: readonly ValueCheck[],
): Promise<void> {
  const needed = uncertainChecks(dialect, checks);
  if (needed.length === 0) return;
  const failed = await dialect.firstFailure(session, needed);
  if (!failed) return;
  throw ApiError.badRequest(
    `${failed.what} has "${
      printable(failed.text)
    }", which is not a value of its type ${failed.type}`,
  );
}

/**
 * The keys of `order`, then the tiebreaker that makes the order total: the primary key's
 * columns not already in it, else (no primary key) the engine's hidden insertion order.
 * Without `order`, that is the default record order: primary key, else insertion. Nulls go
 * last ascending and first descending unless a term says otherwise (PostgREST's default,
 * written out so that no engine's own default applies). An unordered type sorts by its text.
 */
export function sortKeys(
  dialect: AnyDialect,
  table: Table,
  order: readonly OrderTerm[],
): SortKey[] {
  const key = (column: Column, direction: "asc" | "desc", nulls: "first" | "last") => ({
    ...compared(dialect, column, quoteIdent(column.name)),
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
  if (!pk) return [...keys, { ...dialect.insertion, direction: "asc", nulls: "last" }];
  for (const name of pk.columns) {
    if (order.some((t) => t.column === name)) continue;
    keys.push(key(columnOf(table, name), "asc", "last"));
  }
  return keys;
}

/**
 * The condition that a row comes strictly after the one whose key texts (a cursor's, see
 * `cursor.ts`) are `texts`, in the order of `keys`, the texts as values of their keys' types
 * as {@link filterValue} writes them: an integer key's as a literal where the engine inlines
 * integers, which lets DuckDB skip the row groups before it rather than scan the table.
 */
export function afterCondition(
  dialect: AnyDialect,
  keys: readonly SortKey[],
  texts: readonly (string | null)[],
  bound: Binder,
): string {
  const values = keys.map((key, i) => {
    const text = texts[i] ?? null;
    return text === null ? null : filterValue(dialect, key.type, text, bound);
  });
  return keysetCondition(keys, values);
}
