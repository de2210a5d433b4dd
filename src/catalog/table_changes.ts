/**
 * What a `PUT` changes, as a list a person reads before saying yes: the table's name and
 * schema, each column added, dropped, renamed, retyped, made nullable or not, given another
 * default, the columns' order, and each constraint replaced, added or dropped. Columns are
 * matched by id, so a renamed and retyped column is one column with two changes.
 *
 * @module
 */

import type { Column, Constraints, ForeignKey, KeyConstraint, Table } from "./model.ts";

/** A table as it would be: columns without an id are new. */
export interface WantedTable {
  readonly name: string;
  readonly schema: string;
  readonly columns: readonly (Omit<Column, "id"> & { readonly id?: number })[];
  readonly constraints: Constraints;
}

/** One change, named by `change`, with the column or constraint it is about. */
export interface TableChange {
  readonly change:
    | "rename_table"
    | "move_table"
    | "add_column"
    | "drop_column"
    | "rename_column"
    | "retype_column"
    | "set_nullable"
    | "set_default"
    | "reorder_columns"
    | "set_primary_key"
    | "add_unique"
    | "drop_unique"
    | "add_foreign_key"
    | "drop_foreign_key";
  /** The column's name after the change (before it, for a dropped column). */
  readonly column?: string;
  /** The constraint's name. */
  readonly constraint?: string;
  readonly from?: unknown;
  readonly to?: unknown;
}

/**
 * The changes that turn `before` into `after`, in a fixed order: the table, then columns in
 * the order of `after` (drops after them), the columns' order, then constraints.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tableChanges } from "./table_changes.ts";
 *
 * const column = { id: 1, name: "n", type: "INTEGER", default: null, is_nullable: true };
 * const constraints = { primary_key: null, unique: [], foreign_keys: [] };
 * const before = { name: "t", schema: "public", columns: [column], constraints };
 * const after = {
 *   ...before,
 *   columns: [{ ...column, name: "m", type: "BIGINT" }, { ...column, id: undefined, name: "x" }],
 * };
 * assert.deepEqual(tableChanges(before, after).map((c) => c.change), [
 *   "rename_column",
 *   "retype_column",
 *   "add_column",
 * ]);
 * ```
 */
export function tableChanges(before: Table, after: WantedTable): TableChange[] {
  const changes: TableChange[] = [];
  if (before.name !== after.name) {
    changes.push({ change: "rename_table", from: before.name, to: after.name });
  }
  if (before.schema !== after.schema) {
    changes.push({ change: "move_table", from: before.schema, to: after.schema });
  }
  const byId = new Map(before.columns.map((c) => [c.id, c]));
  const kept = new Set<number>();
  for (const column of after.columns) {
    const old = column.id === undefined ? undefined : byId.get(column.id);
    if (!old) {
      changes.push({
        change: "add_column",
        column: column.name,
        to: { type: column.type, default: column.default, is_nullable: column.is_nullable },
      });
      continue;
    }
    kept.add(old.id);
    const at = { column: column.name };
    if (old.name !== column.name) {
      changes.push({ change: "rename_column", ...at, from: old.name, to: column.name });
    }
    if (old.type !== column.type) {
      changes.push({ change: "retype_column", ...at, from: old.type, to: column.type });
    }
    if (old.is_nullable !== column.is_nullable) {
      changes.push({
        change: "set_nullable",
        ...at,
        from: old.is_nullable,
        to: column.is_nullable,
      });
    }
    if ((old.default ?? null) !== (column.default ?? null)) {
      changes.push({ change: "set_default", ...at, from: old.default, to: column.default });
    }
  }
  for (const old of before.columns) {
    if (!kept.has(old.id)) changes.push({ change: "drop_column", column: old.name });
  }
  const order = (ids: readonly (number | undefined)[]) => ids.filter((id) => kept.has(id!));
  const oldOrder = order(before.columns.map((c) => c.id));
  const newOrder = order(after.columns.map((c) => c.id));
  if (oldOrder.some((id, i) => id !== newOrder[i])) {
    changes.push({
      change: "reorder_columns",
      from: before.columns.map((c) => c.name),
      to: after.columns.map((c) => c.name),
    });
  }
  changes.push(...constraintChanges(before.constraints, after.constraints));
  return changes;
}

function constraintChanges(before: Constraints, after: Constraints): TableChange[] {
  const changes: TableChange[] = [];
  const key = (k: KeyConstraint | null) => k && JSON.stringify([k.name, k.columns]);
  if (key(before.primary_key) !== key(after.primary_key)) {
    changes.push({
      change: "set_primary_key",
      constraint: after.primary_key?.name ?? before.primary_key?.name,
      from: before.primary_key,
      to: after.primary_key,
    });
  }
  const uniques = (list: readonly KeyConstraint[]) => new Map(list.map((k) => [key(k)!, k]));
  const [oldUnique, newUnique] = [uniques(before.unique), uniques(after.unique)];
  for (const [k, u] of newUnique) {
    if (!oldUnique.has(k)) {
      changes.push({ change: "add_unique", constraint: u.name, to: u.columns });
    }
  }
  for (const [k, u] of oldUnique) {
    if (!newUnique.has(k)) {
      changes.push({ change: "drop_unique", constraint: u.name, from: u.columns });
    }
  }
  const fk = (f: ForeignKey) => JSON.stringify(f);
  const keys = (list: readonly ForeignKey[]) => new Map(list.map((f) => [fk(f), f]));
  const [oldKeys, newKeys] = [keys(before.foreign_keys), keys(after.foreign_keys)];
  for (const [k, f] of newKeys) {
    if (!oldKeys.has(k)) changes.push({ change: "add_foreign_key", constraint: f.name, to: f });
  }
  for (const [k, f] of oldKeys) {
    if (!newKeys.has(k)) changes.push({ change: "drop_foreign_key", constraint: f.name, from: f });
  }
  return changes;
}
