/**
 * Keyset pagination: a cursor holds the sort key of the last row of a page, and the next page
 * is the rows strictly after it in the same total order (see `sortKeys`). The condition is
 * written so that DuckDB can push its leading comparison into the scan (zonemaps, the key's
 * index), and a page deep in a table costs what the first one does.
 *
 * @module
 */

import { cursorValues as sharedCursorValues, keysetCondition } from "../shared/cursor.ts";
import { BoundValues, type SortKey, typedValue, type ValueCheck } from "./record_filters.ts";

/** The cursor after the row whose keys' texts (see {@link keyText}) are `texts`. */
export { cursorAfter } from "../shared/cursor.ts";

/**
 * The text a cursor keeps of a key's value, `expression` being the key in the statement: the
 * value as VARCHAR, which casts back to the same value (BLOB in base64, as filters take it).
 */
export function keyText(key: SortKey, expression: string): string {
  if (key.type === "BLOB") return `to_base64(${expression})`;
  if (key.type === "VARCHAR") return expression;
  return `CAST(${expression} AS VARCHAR)`;
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
 * const keys = [{ sql: "rowid", type: "BIGINT", direction: "asc" as const, nulls: "last" as const }];
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
    return text === null ? null : typedValue(key.type, bound.add(text));
  });
  return keysetCondition(keys, values);
}
