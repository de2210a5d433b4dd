/**
 * Constraints as the metadata records them, columns by id: the same records on both engines,
 * written by each engine's `recordConstraints`.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";

/** Constraint kinds as stored. */
export type ConstraintKind = "PRIMARY KEY" | "UNIQUE" | "FOREIGN KEY";

/** A constraint to record, columns by id. */
export interface ConstraintRecord {
  readonly kind: ConstraintKind;
  readonly name: string;
  readonly columnIds: readonly number[];
  readonly refTableId?: number;
  readonly refColumnId?: number;
}

/** A foreign key to record: its column, and the referenced table and column. */
export interface ForeignKeyToRecord {
  readonly name: string;
  readonly column: string;
  /** The referenced table; `id` is undefined when a table references itself. */
  readonly table: { readonly id?: number };
  readonly refColumn: string;
  readonly refColumnId?: number;
}

/**
 * A plan's constraints as records, in the order they are stored: primary key, unique keys,
 * foreign keys. `idOf` gives a column's id by name; a foreign key to the table itself refers
 * to `tableId`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { constraintRecords } from "./constraint_records.ts";
 *
 * const records = constraintRecords(
 *   { primaryKey: { name: "t_pkey", columns: ["id"] }, unique: [] },
 *   [],
 *   7,
 *   () => 1,
 * );
 * assert.deepEqual(records, [{ kind: "PRIMARY KEY", name: "t_pkey", columnIds: [1] }]);
 * ```
 */
export function constraintRecords(
  plan: Pick<TablePlan, "primaryKey" | "unique">,
  foreignKeys: readonly ForeignKeyToRecord[],
  tableId: number,
  idOf: (name: string) => number,
): ConstraintRecord[] {
  return [
    ...(plan.primaryKey
      ? [{
        kind: "PRIMARY KEY" as const,
        name: plan.primaryKey.name,
        columnIds: plan.primaryKey.columns.map(idOf),
      }]
      : []),
    ...plan.unique.map((k) => ({
      kind: "UNIQUE" as const,
      name: k.name,
      columnIds: k.columns.map(idOf),
    })),
    ...foreignKeys.map((fk) => ({
      kind: "FOREIGN KEY" as const,
      name: fk.name,
      columnIds: [idOf(fk.column)],
      refTableId: fk.table.id ?? tableId,
      refColumnId: fk.table.id === undefined ? idOf(fk.refColumn) : fk.refColumnId,
    })),
  ];
}
