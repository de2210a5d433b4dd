/**
 * Keyset pagination on PostgreSQL: a cursor holds the sort key of the last row of a page as
 * text, and the next page is the rows strictly after it in the same total order (see
 * `sortKeys`). The cursor format is the DuckDB store's (`encodeCursor`), bound to the order
 * it continues.
 *
 * @module
 */

import { decodeCursor, encodeCursor, orderSignature } from "../../catalog/filters.ts";
import { ApiError } from "../../errors.ts";
import { bind, type SortKey, typedValue, type ValueCheck } from "./record_filters.ts";

/** Whether the key can be null: a nullable column (a primary key's and the order's cannot). */
function nullable(key: SortKey): boolean {
  return key.column?.is_nullable ?? false;
}

/**
 * The text a cursor keeps of a key's value, `expression` being the key in the statement: its
 * text, which casts back to the same value (bytea in base64, as filters take it).
 */
export function keyText(key: SortKey, expression: string): string {
  if (key.type === "bytea") return `translate(encode(${expression}, 'base64'), E'\\n', '')`;
  return `${expression}::text`;
}

/** What a cursor is bound to: the whole order, tiebreaker included. */
function signature(keys: readonly SortKey[]): string {
  return orderSignature(
    keys.map((k) => ({
      column: k.column?.name ?? "rowid",
      direction: k.direction,
      nulls: k.nulls,
    })),
  );
}

/** The cursor after the row whose keys' texts (see {@link keyText}) are `texts`. */
export function cursorAfter(keys: readonly SortKey[], texts: readonly (string | null)[]): string {
  return encodeCursor(texts, signature(keys));
}

/**
 * The key texts a cursor of {@link cursorAfter} holds, with the checks that they convert.
 *
 * @throws {ApiError} 400 for text that is no cursor, or a cursor of another order.
 */
export function cursorValues(
  keys: readonly SortKey[],
  cursor: string,
): { texts: (string | null)[]; checks: ValueCheck[] } {
  const values = decodeCursor(cursor, signature(keys));
  if (
    values.length !== keys.length || !values.every((v) => v === null || typeof v === "string")
  ) {
    throw ApiError.badRequest(
      "Query parameter after is not a cursor this service gave out; use the one a previous page returned",
    );
  }
  const texts = values as (string | null)[];
  const checks = keys.flatMap((key, i) => {
    const text = texts[i];
    return text === null || text === undefined
      ? []
      : [{ type: key.type, text, what: "Query parameter after" }];
  });
  return { texts, checks };
}

/**
 * The condition that a row comes strictly after the one whose key texts are `texts`, in the
 * order of `keys`; the values are bound into `params`. For keys k1, k2, …: k1 after, or k1
 * equal and (k2 after, or …), preceded, when there are several keys, by "k1 at or after",
 * a plain comparison an index on k1 can serve.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterCondition } from "./record_cursor.ts";
 *
 * const params: unknown[] = [];
 * const keys = [{ sql: '"id"', type: "bigint", direction: "asc" as const, nulls: "last" as const }];
 * assert.equal(afterCondition(keys, ["41"], params), '"id" > $1::bigint');
 * assert.deepEqual(params, ["41"]);
 * ```
 */
export function afterCondition(
  keys: readonly SortKey[],
  texts: readonly (string | null)[],
  params: unknown[],
): string {
  const values = keys.map((key, i) => {
    const text = texts[i] ?? null;
    return text === null ? null : typedValue(key.type, bind(params, text));
  });
  const after = (i: number): string => {
    const key = keys[i]!;
    const value = values[i]!;
    const beyond = strictlyAfter(key, value);
    if (i === keys.length - 1) return beyond;
    return `${beyond} OR (${equal(key, value)} AND (${after(i + 1)}))`;
  };
  const rest = after(0);
  if (keys.length === 1) return rest;
  const lead = atOrAfter(keys[0]!, values[0]!);
  return lead === "TRUE" ? rest : `${lead} AND (${rest})`;
}

function equal(key: SortKey, value: string | null): string {
  return value === null ? `${key.sql} IS NULL` : `${key.sql} = ${value}`;
}

function strictlyAfter(key: SortKey, value: string | null): string {
  if (value === null) return key.nulls === "first" ? `${key.sql} IS NOT NULL` : "FALSE";
  const beyond = `${key.sql} ${key.direction === "asc" ? ">" : "<"} ${value}`;
  return key.nulls === "last" && nullable(key) ? `(${beyond} OR ${key.sql} IS NULL)` : beyond;
}

function atOrAfter(key: SortKey, value: string | null): string {
  if (value === null) return key.nulls === "first" ? "TRUE" : `${key.sql} IS NULL`;
  const reached = `${key.sql} ${key.direction === "asc" ? ">=" : "<="} ${value}`;
  return key.nulls === "last" && nullable(key) ? `(${reached} OR ${key.sql} IS NULL)` : reached;
}
