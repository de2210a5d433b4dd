/**
 * The constraint side of a table update, the same on both engines: the constraints a plan
 * gives, in their response form, and what other tables' foreign keys into the table would
 * lose.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import type { Table } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { ErrorDetail } from "../../errors.ts";
import type { ColumnChange } from "./column_change.ts";
import type { ResolvedForeignKey } from "./foreign_keys.ts";

/** The constraints a plan gives, in their response form, to compare with the current ones. */
export function plannedConstraints(
  plan: TablePlan,
  foreignKeys: readonly ResolvedForeignKey[],
): Table["constraints"] {
  return {
    primary_key: plan.primaryKey
      ? { name: plan.primaryKey.name, columns: [...plan.primaryKey.columns] }
      : null,
    unique: plan.unique.map((k) => ({ name: k.name, columns: [...k.columns] })),
    foreign_keys: foreignKeys.map((fk) => ({
      name: fk.name,
      column: fk.column,
      reference_table: fk.table.name,
      reference_column: fk.refColumn,
      reference_schema: fk.table.schema,
    })),
  };
}

/** Another table's foreign key into the table being updated. */
export interface ReferenceInto {
  /** The foreign key's name. */
  readonly constraint: string;
  /** The referencing table's schema and name. */
  readonly schema: string;
  readonly name: string;
  /** The id of the referenced column in the table being updated. */
  readonly refColumnId: number;
}

/**
 * What other tables' foreign keys into this table would lose: the column they reference,
 * its key, its type, or the shared schema.
 */
export function referenceProblems(
  current: Table,
  plan: TablePlan,
  columns: readonly ColumnChange[],
  into: readonly ReferenceInto[],
  moved: boolean,
): ErrorDetail[] {
  const keys = [...(plan.primaryKey ? [plan.primaryKey] : []), ...plan.unique]
    .filter((k) => k.columns.length === 1).map((k) => nameKey(k.columns[0]!));
  const problems: ErrorDetail[] = [];
  for (const fk of into) {
    const by = `foreign key "${fk.constraint}" of table "${fk.schema}.${fk.name}"`;
    const referenced = current.columns.find((c) => c.id === fk.refColumnId);
    const change = columns.find((c) => c.source?.id === fk.refColumnId);
    const push = (message: string) =>
      problems.push({ column: referenced?.name, constraint: fk.constraint, message });
    if (moved) {
      push(`Table "${current.name}" is referenced by ${by}, and foreign keys stay within a schema`);
    } else if (!change) {
      push(`Column "${referenced?.name}" is referenced by ${by}; drop that foreign key first`);
    } else if (!keys.includes(nameKey(change.planned.name))) {
      push(
        `Column "${change.planned.name}" is referenced by ${by}, so it must stay by itself ` +
          `the primary key or unique`,
      );
    } else if (change.retyped) {
      push(
        `Column "${change.planned.name}" is referenced by ${by}, so its type cannot change ` +
          `from ${change.source!.type} to ${change.type}`,
      );
    }
  }
  return problems;
}
