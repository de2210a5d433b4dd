/**
 * The key `on_conflict=skip` and `update` resolve conflicts on, the same on both engines: the
 * primary key, else the only unique constraint.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import type { OnConflict } from "../store.ts";

/**
 * The columns of the key conflicts are resolved on: the primary key's, else the only unique
 * constraint's; undefined when the table has neither.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { conflictKey } from "./conflict_key.ts";
 *
 * const table = {
 *   name: "t", schema: "public", columns: [],
 *   constraints: { primary_key: null, unique: [{ name: "u", columns: ["a"] }], foreign_keys: [] },
 * };
 * assert.deepEqual(conflictKey(table), ["a"]);
 * ```
 */
export function conflictKey(table: Table): readonly string[] | undefined {
  if (table.constraints.primary_key) return table.constraints.primary_key.columns;
  if (table.constraints.unique.length === 1) return table.constraints.unique[0]!.columns;
  return undefined;
}

/**
 * 422 when `onConflict` resolves conflicts (`skip`, `update`) and `table` has no
 * {@link conflictKey} to match rows by.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkConflictKey } from "./conflict_key.ts";
 *
 * const table = {
 *   name: "t", schema: "public", columns: [],
 *   constraints: { primary_key: null, unique: [], foreign_keys: [] },
 * };
 * checkConflictKey(table, "fail");
 * assert.throws(() => checkConflictKey(table, "skip"));
 * ```
 */
export function checkConflictKey(table: Table, onConflict: OnConflict): void {
  if (onConflict !== "fail" && !conflictKey(table)) {
    throw ApiError.invalidData(
      `on_conflict=${onConflict} needs a primary key or exactly one unique constraint; ` +
        `table "${table.name}" has neither`,
    );
  }
}
