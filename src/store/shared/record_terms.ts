/**
 * The engine-neutral terms of a records read: the columns it names, the keys of its order
 * and their ORDER BY list, and the value checks its filters need. `record_filters.ts` beside
 * it builds the SQL from these, in each engine's dialect.
 *
 * @module
 */

import type { Column, Table } from "../../catalog/model.ts";
import { printable } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";

/**
 * The column a filter or sort key names.
 *
 * @throws {ApiError} 400 if the table lacks it (a stale parse).
 */
export function columnOf(table: Table, name: string): Column {
  const column = table.columns.find((c) => c.name === name);
  if (!column) throw ApiError.badRequest(`The table has no column "${printable(name)}"`);
  return column;
}

/**
 * The columns a read returns: `select`'s, in its order, or all the table's.
 *
 * @throws {ApiError} 400 for a name the table lacks.
 */
export function selectedColumns(table: Table, select?: readonly string[]): Column[] {
  return select ? select.map((name) => columnOf(table, name)) : [...table.columns];
}

/** A text that must convert to a type, and what to name in the 400 when it does not. */
export interface ValueCheck {
  readonly type: string;
  readonly text: string;
  /** The start of the message: `Filter on column "age"`. */
  readonly what: string;
}

/**
 * One key of a total order: a column (or the engine's insertion order), a direction, and
 * where its nulls go, always explicit.
 */
export interface OrderKey {
  /** The key's SQL expression. */
  readonly sql: string;
  /** The column, absent for the insertion order. */
  readonly column?: Column;
  readonly direction: "asc" | "desc";
  readonly nulls: "first" | "last";
}

/**
 * The ORDER BY list of `keys` (without the words ORDER BY), each key written by `expression`
 * (by default its own SQL: pass another to sort a subquery by its aliases).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { orderBy } from "./record_terms.ts";
 *
 * const keys = [{ sql: '"age"', direction: "desc" as const, nulls: "first" as const }];
 * assert.equal(orderBy(keys), '"age" DESC NULLS FIRST');
 * ```
 */
export function orderBy<K extends OrderKey>(
  keys: readonly K[],
  expression: (key: K, index: number) => string = (key) => key.sql,
): string {
  return keys.map((key, i) =>
    `${expression(key, i)} ${key.direction.toUpperCase()} NULLS ${key.nulls.toUpperCase()}`
  ).join(", ");
}
