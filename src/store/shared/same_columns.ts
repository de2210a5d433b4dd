/**
 * Whether a definition matches an existing table, the same on both engines: the same column
 * names, each with the same type as the engine names it.
 *
 * @module
 */

import type { PlannedColumn, TablePlan } from "../../catalog/definition.ts";
import type { Table } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError, type ErrorDetail } from "../../errors.ts";

/**
 * 422 unless `plan` has the same columns (names and types) as the existing `table`.
 * `typeOf` gives a planned column's type as the engine names it, as the table's columns are;
 * it is asked only for columns the table has. Two types are the same when `canonical` gives
 * them one name (PostgreSQL's `text` and `character varying` hold the same values).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planTable } from "../../catalog/definition.ts";
 * import { checkSameColumns } from "./same_columns.ts";
 *
 * const plan = planTable({ schema: "public", name: "t" }, {
 *   columns: [{ name: "id", type: "integer" }],
 * });
 * const table = {
 *   name: "t",
 *   schema: "public",
 *   columns: [],
 *   constraints: { primary_key: null, unique: [], foreign_keys: [] },
 * };
 * await assert.rejects(checkSameColumns(table, plan, () => "INTEGER"));
 * ```
 */
export async function checkSameColumns(
  table: Table,
  plan: TablePlan,
  typeOf: (column: PlannedColumn) => string | Promise<string>,
  canonical: (type: string) => string = (type) => type,
): Promise<void> {
  const problems: ErrorDetail[] = [];
  const existing = new Map(table.columns.map((c) => [nameKey(c.name), c]));
  for (const column of plan.columns) {
    const match = existing.get(nameKey(column.name));
    if (!match) {
      problems.push({
        column: column.name,
        message: `Column "${column.name}" is not in table "${table.name}"`,
      });
      continue;
    }
    existing.delete(nameKey(column.name));
    const type = await typeOf(column);
    if (canonical(type) !== canonical(match.type)) {
      problems.push({
        column: column.name,
        message: `Column "${column.name}" is ${match.type} in table "${table.name}", not ${type}`,
      });
    }
  }
  for (const missing of existing.values()) {
    problems.push({
      column: missing.name,
      message: `Column "${missing.name}" of table "${table.name}" is not in the definition`,
    });
  }
  if (problems.length > 0) {
    throw ApiError.unprocessable(
      `The definition does not match the existing table "${table.name}": ${problems[0]!.message}`,
      problems,
    );
  }
}
