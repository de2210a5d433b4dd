/**
 * Keyset pagination on PostgreSQL: a cursor holds the sort key of the last row of a page as
 * text, and the next page is the rows strictly after it in the same total order (see
 * `sortKeys`). The cursor format is the DuckDB store's (`encodeCursor`), bound to the order
 * it continues.
 *
 * @module
 */

import { cursorValues as sharedCursorValues, keysetCondition } from "../shared/cursor.ts";
import { bind, type SortKey, typedValue, type ValueCheck } from "./record_filters.ts";

/** The cursor after the row whose keys' texts (see {@link keyText}) are `texts`. */
export { cursorAfter } from "../shared/cursor.ts";

/**
 * The text a cursor keeps of a key's value, `expression` being the key in the statement: its
 * text, which casts back to the same value (bytea in base64, as filters take it).
 */
export function keyText(key: SortKey, expression: string): string {
  if (key.type === "bytea") return `translate(encode(${expression}, 'base64'), E'\\n', '')`;
  return `${expression}::text`;
}

/**
 * The key texts a cursor of `cursorAfter` holds, with the checks that they convert.
 *
 * @throws {ApiError} 400 for text that is no cursor, or a cursor of another order.
 */
export function cursorValues(
  keys: readonly SortKey[],
  cursor: string,
): { texts: (string | null)[]; checks: ValueCheck[] } {
  return sharedCursorValues(keys, cursor, (key) => key.type);
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
  return keysetCondition(keys, values);
}
