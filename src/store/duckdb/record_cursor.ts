/**
 * Keyset pagination: a cursor holds the sort key of the last row of a page, and the next page
 * is the rows strictly after it in the same total order (see `sortKeys`). The condition is
 * written so that DuckDB can push its leading comparison into the scan (zonemaps, the key's
 * index), and a page deep in a table costs what the first one does.
 *
 * @module
 */

import { decodeCursor, encodeCursor, orderSignature } from "../../catalog/filters.ts";
import { ApiError } from "../../errors.ts";
import { BoundValues, type SortKey, typedValue, type ValueCheck } from "./record_filters.ts";

/** The type a key's values have: its column's, or BIGINT for `rowid`. */
function keyType(key: SortKey): string {
  return key.column?.type ?? "BIGINT";
}

/** Whether the key can be null: a nullable column (a primary key's and `rowid` cannot). */
function nullable(key: SortKey): boolean {
  return key.column?.is_nullable ?? false;
}

/**
 * The text a cursor keeps of a key's value, `expression` being the key in the statement: the
 * value as VARCHAR, which casts back to the same value (BLOB in base64, as filters take it).
 */
export function keyText(key: SortKey, expression: string): string {
  if (keyType(key) === "BLOB") return `to_base64(${expression})`;
  if (keyType(key) === "VARCHAR") return expression;
  return `CAST(${expression} AS VARCHAR)`;
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
      : [{ type: keyType(key), text, what: "Query parameter after" }];
  });
  return { texts, checks };
}

/**
 * The condition that a row comes strictly after the one whose key texts are `texts`, in the
 * order of `keys`; the values are bound into `bound`. For keys k1, k2, …: k1 after, or k1
 * equal and (k2 after, or …), preceded, when there are several keys, by "k1 at or after",
 * a plain comparison DuckDB pushes into the scan.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterCondition } from "./record_cursor.ts";
 * import { BoundValues } from "./record_filters.ts";
 *
 * const bound = new BoundValues();
 * const keys = [{ sql: "rowid", direction: "asc" as const, nulls: "last" as const }];
 * assert.equal(afterCondition(keys, ["41"], bound), "rowid > CAST($1 AS BIGINT)");
 * assert.deepEqual(bound.values, ["41"]);
 * ```
 */
export function afterCondition(
  keys: readonly SortKey[],
  texts: readonly (string | null)[],
  bound: BoundValues,
): string {
  const values = keys.map((key, i) => {
    const text = texts[i] ?? null;
    return text === null ? null : typedValue({ type: keyType(key) }, bound.add(text));
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
