/**
 * What a change of records by filter sets, checked the same way on both engines before any
 * statement runs (its keys matched to columns as a row's keys are, and no null for a NOT
 * NULL column), and what a change or delete by filter answers.
 *
 * @module
 */

import type { Column, Table } from "../../catalog/model.ts";
import { matchRowKeys } from "../../catalog/rows.ts";
import { ApiError, type ErrorDetail, summarise } from "../../errors.ts";
import type { ColumnChange } from "../store.ts";

/** Updated rows and the table they are in. */
export interface Updated {
  readonly table: Table;
  readonly updated: number;
}

/** Deleted rows and the table they were in. */
export interface Deleted {
  readonly table: Table;
  readonly deleted: number;
}

/** One column to set: the column, and its value's JSON text (`null` for SQL NULL). */
export interface Assignment {
  readonly column: Column;
  readonly json: string | null;
}

/**
 * The columns `changes` set.
 *
 * @throws {ApiError} 422 naming every key that names no column (or a column another key
 * names too) and every null for a NOT NULL column.
 */
export async function assign(
  table: Table,
  changes: readonly ColumnChange[],
): Promise<Assignment[]> {
  // Matched as a row's keys are, exactly first, then ignoring case; rows: 0, as a change
  // leaves the columns it does not name as they are.
  const { mapping, problems } = await matchRowKeys(
    table,
    {
      rows: 0,
      form: "objects",
      keys: changes.map((c) => c.key),
      keysComplete: true,
      firstRowOfLength: new Map(),
      hasData: true,
    },
    () => Promise.resolve(undefined),
  );
  const json = new Map(changes.map((c) => [c.key, c.json]));
  const assignments = mapping.map((m) => {
    const text = json.get(m.key)!;
    return { column: m.column, json: text === "null" ? null : text };
  });
  for (const a of assignments) {
    if (a.json === null && !a.column.is_nullable) {
      problems.push({
        column: a.column.name,
        message: `Column "${a.column.name}" is NOT NULL but the value is null`,
      });
    }
  }
  if (problems.length > 0) throw doesNotFit(table, problems);
  return assignments;
}

/**
 * The 422 for changes that do not fit `table`, naming every problem (rows left out: a
 * change has none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { doesNotFit } from "./assignments.ts";
 *
 * const table = { schema: "public", name: "t", columns: [], primary_key: [] };
 * const error = doesNotFit(table as never, [{ column: "a", message: "Bad" }]);
 * assert.equal(error.status, 422);
 * ```
 */
export function doesNotFit(table: Table, problems: readonly ErrorDetail[]): ApiError {
  const details = problems.map(({ row: _, ...rest }) => rest);
  return ApiError.invalidData(
    `The change does not fit table "${table.name}": ${summarise(details)}`,
    details,
  );
}
