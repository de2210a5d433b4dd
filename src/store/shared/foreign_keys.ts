/**
 * Resolving a plan's foreign keys: each one's target found and checked to be a single-column
 * key there. The rules are the catalog's; each engine only looks the referenced table up.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { ErrorDetail } from "../../errors.ts";

/** A foreign key with its target found. */
export interface ResolvedForeignKey {
  readonly name: string;
  readonly column: string;
  /** The referenced table; `id` is undefined when a table references itself. */
  readonly table: { readonly id?: number; readonly schema: string; readonly name: string };
  readonly refColumn: string;
  readonly refColumnId?: number;
  /** The referenced column's type, for a table other than this one. */
  readonly refType?: string;
}

/** A referenced table as the engine found it: its stored address and its description. */
export interface ReferencedTable {
  readonly row: { readonly id: number; readonly schema: string; readonly name: string };
  readonly table: Table;
}

/**
 * Finds each foreign key's target and checks it is a single-column key there, pushing a
 * problem for each one that is not. `lookUp` finds and describes another table, or gives
 * undefined when there is none.
 */
export async function resolveForeignKeys(
  ref: TableRef,
  plan: TablePlan,
  problems: ErrorDetail[],
  lookUp: (ref: TableRef) => Promise<ReferencedTable | undefined>,
): Promise<ResolvedForeignKey[]> {
  const resolved: ResolvedForeignKey[] = [];
  for (const fk of plan.foreignKeys) {
    const where = `foreign key "${fk.name}"`;
    if (nameKey(fk.reference.schema) !== nameKey(ref.schema)) {
      problems.push({
        column: fk.column,
        message: `The ${where} references schema "${fk.reference.schema}", but foreign keys ` +
          `must stay within the table's own schema "${ref.schema}"`,
      });
      continue;
    }
    if (nameKey(fk.reference.name) === nameKey(ref.name)) {
      const keys = [...(plan.primaryKey ? [plan.primaryKey] : []), ...plan.unique];
      const target = plan.columns.find((c) => nameKey(c.name) === nameKey(fk.referenceColumn));
      if (
        !target ||
        !keys.some((k) => k.columns.length === 1 && nameKey(k.columns[0]!) === nameKey(target.name))
      ) {
        problems.push({
          column: fk.column,
          message:
            `The ${where} must reference a column that is by itself the primary key or unique`,
        });
        continue;
      }
      resolved.push({ name: fk.name, column: fk.column, table: ref, refColumn: target.name });
      continue;
    }
    const found = await lookUp(fk.reference);
    if (!found) {
      problems.push({
        column: fk.column,
        message:
          `The ${where} references table "${fk.reference.schema}.${fk.reference.name}", which does not exist`,
      });
      continue;
    }
    const { row: target, table: described } = found;
    const refColumn = described.columns.find((c) =>
      nameKey(c.name) === nameKey(fk.referenceColumn)
    );
    const keys = [
      ...(described.constraints.primary_key ? [described.constraints.primary_key] : []),
      ...described.constraints.unique,
    ];
    if (
      !refColumn || !keys.some((k) => k.columns.length === 1 && k.columns[0] === refColumn.name)
    ) {
      problems.push({
        column: fk.column,
        message: `The ${where} must reference a column of "${target.name}" that is by itself its ` +
          `primary key or unique; "${fk.referenceColumn}" is not`,
      });
      continue;
    }
    resolved.push({
      name: fk.name,
      column: fk.column,
      table: target,
      refColumn: refColumn.name,
      refColumnId: refColumn.id,
      refType: refColumn.type,
    });
  }
  return resolved;
}
