/**
 * Constraints as the metadata records them, columns by id: the same records, written by the
 * same statement, on both engines.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import type { ListSession } from "./core.ts";
import { META } from "./metadata_rows.ts";

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

/** Records a table's constraints, in the given order, in one statement. */
export async function recordConstraints(
  session: ListSession,
  tableId: number,
  constraints: readonly ConstraintRecord[],
): Promise<void> {
  // An empty list has no element type DuckDB could bind.
  if (constraints.length === 0) return;
  // Lists of one type each: a constraint's column ids travel as text ("1,2"), a missing
  // reference as 0, which no id is.
  const list = (values: (string | number)[]) => session.list(values);
  await session.run(
    `INSERT INTO ${META}.constraints
       (table_id, position, kind, constraint_name, column_ids, ref_table_id, ref_column_id)
     SELECT $1, p, k, n, string_to_array(c, ',')::integer[], nullif(t, 0), nullif(r, 0)
     FROM (SELECT unnest($2::integer[]) AS p, unnest($3::text[]) AS k, unnest($4::text[]) AS n,
       unnest($5::text[]) AS c, unnest($6::integer[]) AS t, unnest($7::integer[]) AS r) s`,
    [
      tableId,
      list(constraints.map((_, position) => position)),
      list(constraints.map((c) => c.kind)),
      list(constraints.map((c) => c.name)),
      list(constraints.map((c) => c.columnIds.join(","))),
      list(constraints.map((c) => c.refTableId ?? 0)),
      list(constraints.map((c) => c.refColumnId ?? 0)),
    ],
  );
}
