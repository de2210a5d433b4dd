/**
 * The frame of the fast insert paths (a body loaded while it arrives, small bodies loaded
 * together): they run only in the plain case and step aside, having changed nothing, for
 * the ordinary whole-body path otherwise.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { type KeyColumn, matchRowKeys } from "../../catalog/rows.ts";
import { ApiError } from "../../errors.ts";
import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import type { StoreContext } from "./context.ts";
import { appendLocks } from "./store_locks.ts";
import { getTable } from "./tables.ts";

/**
 * Runs `load` under an append's locks with the table and the columns `sample`'s keys map
 * to. Undefined, having changed nothing, when the table is missing (the whole-body path
 * answers that, after the body's own errors), a key maps to no column, or `load` fails:
 * the caller then takes the ordinary path. A full disk is thrown: no path mends that, and
 * the ordinary one would meet the database still being reopened.
 */
export function loadPlainly<T>(
  context: StoreContext,
  ref: TableRef,
  sample: RowsSummary,
  load: (table: Table, mapping: KeyColumn[]) => Promise<T>,
): Promise<T | undefined> {
  return context.locks.run(appendLocks(ref), async () => {
    const table = await getTable(context, ref).catch(() => undefined);
    if (!table) return undefined;
    const { mapping, problems } = await matchRowKeys(table, sample, () => Promise.resolve(0));
    if (problems.length > 0 || mapping.length === 0) return undefined;
    try {
      return await load(table, mapping);
    } catch (error) {
      if (error instanceof ApiError && error.status === 507) throw error;
      return undefined;
    }
  });
}
