/**
 * Keyset pagination both engines share: a cursor holds the sort key texts of the last row of
 * a page, bound to the whole order it continues, and the next page is the rows strictly
 * after it in that total order. How a key's value becomes text and typed SQL again is each
 * engine's; the cursor format and the shape of the condition are the same on both.
 *
 * @module
 */

import { decodeCursor, encodeCursor, orderSignature } from "../../catalog/filters.ts";
import { ApiError } from "../../errors.ts";
import type { OrderKey, ValueCheck } from "./record_terms.ts";

/** What a cursor is bound to: the whole order, tiebreaker included. */
function signature(keys: readonly OrderKey[]): string {
  return orderSignature(
    keys.map((k) => ({
      column: k.column?.name ?? "rowid",
      direction: k.direction,
      nulls: k.nulls,
    })),
  );
}

/**
 * The cursor after the row whose keys' texts are `texts`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cursorAfter, cursorValues } from "./cursor.ts";
 *
 * const keys = [{ sql: "rowid", direction: "asc" as const, nulls: "last" as const }];
 * assert.deepEqual(cursorValues(keys, cursorAfter(keys, ["41"]), () => "BIGINT").texts, ["41"]);
 * ```
 */
export function cursorAfter(
  keys: readonly OrderKey[],
  texts: readonly (string | null)[],
): string {
  return encodeCursor(texts, signature(keys));
}

/**
 * The key texts a cursor of {@link cursorAfter} holds, with the checks that they convert to
 * their keys' types, `typeOf` naming a key's type on the engine.
 *
 * @throws {ApiError} 400 for text that is no cursor, or a cursor of another order.
 */
export function cursorValues<K extends OrderKey>(
  keys: readonly K[],
  cursor: string,
  typeOf: (key: K) => string,
): { texts: (string | null)[]; checks: ValueCheck[] } {
  const texts = cursorTexts(keys, cursor);
  const checks = keys.flatMap((key, i) => {
    const text = texts[i];
    return text === null || text === undefined
      ? []
      : [{ type: typeOf(key), text, what: "Query parameter after" }];
  });
  return { texts, checks };
}

/** The key texts a cursor of {@link cursorAfter} holds, one per key; 400 for no cursor. */
function cursorTexts(keys: readonly OrderKey[], cursor: string): (string | null)[] {
  const values = decodeCursor(cursor, signature(keys));
  if (
    values.length !== keys.length || !values.every((v) => v === null || typeof v === "string")
  ) {
    throw ApiError.badRequest(
      "Query parameter after is not a cursor this service gave out; use the one a previous page returned",
    );
  }
  return values as (string | null)[];
}

/** Whether the key can be null: a nullable column (a primary key's and the order's cannot). */
function nullable(key: OrderKey): boolean {
  return key.column?.is_nullable ?? false;
}

/**
 * The condition that a row comes strictly after the one whose keys' values are `values`
 * (typed SQL expressions, null for a null key), in the order of `keys`. For keys k1, k2, …:
 * k1 after, or k1 equal and (k2 after, or …), preceded, when there are several keys, by
 * "k1 at or after", a plain comparison the engine can serve from k1's index or zonemaps.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keysetCondition } from "./cursor.ts";
 *
 * const keys = [{ sql: '"id"', direction: "asc" as const, nulls: "last" as const }];
 * assert.equal(keysetCondition(keys, ["$1"]), '"id" > $1');
 * ```
 */
export function keysetCondition(
  keys: readonly OrderKey[],
  values: readonly (string | null)[],
): string {
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

function equal(key: OrderKey, value: string | null): string {
  return value === null ? `${key.sql} IS NULL` : `${key.sql} = ${value}`;
}

function strictlyAfter(key: OrderKey, value: string | null): string {
  if (value === null) return key.nulls === "first" ? `${key.sql} IS NOT NULL` : "FALSE";
  const beyond = `${key.sql} ${key.direction === "asc" ? ">" : "<"} ${value}`;
  return key.nulls === "last" && nullable(key) ? `(${beyond} OR ${key.sql} IS NULL)` : beyond;
}

function atOrAfter(key: OrderKey, value: string | null): string {
  if (value === null) return key.nulls === "first" ? "TRUE" : `${key.sql} IS NULL`;
  const reached = `${key.sql} ${key.direction === "asc" ? ">=" : "<="} ${value}`;
  return key.nulls === "last" && nullable(key) ? `(${reached} OR ${key.sql} IS NULL)` : reached;
}
