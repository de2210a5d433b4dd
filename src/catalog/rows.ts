/**
 * Rows against a table: which key of the rows feeds which column, and what is missing.
 *
 * @module
 */

import type { RowsSummary } from "../ingest/json_rows_summary.ts";
import { ApiError, type ErrorDetail, summarise } from "../errors.ts";
import { checkWidth } from "./definition.ts";
import type { Column, Table } from "./model.ts";
import { nameKey } from "./names.ts";

/** One key of the rows and the column it fills. */
export interface KeyColumn {
  readonly key: string;
  readonly column: Column;
}

/** Where a key first appears, for messages; looked up only when something is wrong. */
export type FirstRowOfKey = (key: string) => Promise<number | undefined>;

/**
 * Maps the keys the rows use to the table's columns: by name (exactly, or else ignoring
 * case) for object rows, by position for array rows. Throws 422 naming every unknown key,
 * surplus position, and missing required column.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapRowKeys } from "./rows.ts";
 *
 * const table = {
 *   name: "t",
 *   schema: "public",
 *   columns: [
 *     { id: 1, name: "id", type: "INTEGER", default: null, is_nullable: false },
 *     { id: 2, name: "Name", type: "VARCHAR", default: null, is_nullable: true },
 *   ],
 *   constraints: { primary_key: null, unique: [], foreign_keys: [] },
 * };
 * const summary = {
 *   rows: 1,
 *   form: "objects" as const,
 *   keys: ["id", "name"],
 *   keysComplete: true,
 *   firstRowOfLength: new Map(),
 *   hasData: true,
 * };
 * const mapping = await mapRowKeys(table, summary, () => Promise.resolve(0));
 * assert.deepEqual(mapping.map((m) => [m.key, m.column.name]), [["id", "id"], ["name", "Name"]]);
 * ```
 */
export async function mapRowKeys(
  table: Table,
  summary: RowsSummary,
  firstRowOfKey: FirstRowOfKey,
): Promise<KeyColumn[]> {
  const { mapping, problems } = await matchRowKeys(table, summary, firstRowOfKey);
  if (problems.length > 0) throw rowsDoNotFit(table, problems);
  return mapping;
}

/**
 * {@link mapRowKeys} without the throw: the keys that map, and a problem for each one that
 * does not (and for each missing required column), so callers can add other problems.
 */
export async function matchRowKeys(
  table: Table,
  summary: RowsSummary,
  firstRowOfKey: FirstRowOfKey,
): Promise<{ mapping: KeyColumn[]; problems: ErrorDetail[] }> {
  const problems: ErrorDetail[] = [];
  const mapping: KeyColumn[] = [];
  // More keys than any table has columns: 422 before each is looked up and explained.
  if (summary.form === "objects") checkWidth("The rows have", summary.keys.length, "keys");
  if (summary.form === "arrays") {
    const longest = summary.keys.length;
    if (longest > table.columns.length) {
      const row = [...summary.firstRowOfLength].filter(([length]) => length > table.columns.length)
        .map(([, row]) => row).sort((a, b) => a - b)[0];
      throw ApiError.invalidData(
        `Row ${row} has ${longest} values but table "${table.name}" has ${table.columns.length} columns`,
        [{ row, message: `At most ${table.columns.length} values per row` }],
      );
    }
    summary.keys.forEach((key, index) => mapping.push({ key, column: table.columns[index]! }));
  } else {
    const exact = new Map(table.columns.map((c) => [c.name, c]));
    const folded = new Map(table.columns.map((c) => [nameKey(c.name), c]));
    const used = new Map<number, string>();
    for (const key of summary.keys) {
      const column = exact.get(key) ?? folded.get(nameKey(key));
      if (!column) {
        problems.push({
          row: await firstRowOfKey(key),
          column: key,
          message: `Unknown column "${key}"`,
        });
        continue;
      }
      const other = used.get(column.id);
      if (other !== undefined) {
        problems.push({
          row: await firstRowOfKey(key),
          column: key,
          message: `Keys "${other}" and "${key}" both name column "${column.name}"`,
        });
        continue;
      }
      used.set(column.id, key);
      mapping.push({ key, column });
    }
  }
  if (summary.rows > 0) {
    const given = new Set(mapping.map((m) => m.column.id));
    for (const column of table.columns) {
      if (!given.has(column.id) && !column.is_nullable && column.default === null) {
        problems.push({
          row: 0,
          column: column.name,
          message: `Column "${column.name}" is NOT NULL, has no default, and is missing`,
        });
      }
    }
  }
  return { mapping, problems };
}

/** The 422 for rows that do not fit `table`: every problem, in row order. */
export function rowsDoNotFit(table: Table, problems: readonly ErrorDetail[]): ApiError {
  const sorted = [...problems].sort((a, b) => (a.row ?? 0) - (b.row ?? 0));
  return ApiError.invalidData(
    `The rows do not fit table "${table.name}": ${summarise(sorted)}`,
    sorted,
  );
}
