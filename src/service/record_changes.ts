/**
 * Records changed by filter: `PATCH` sets columns, `DELETE` removes rows, each in one
 * transaction, on the rows the records read's filters choose.
 *
 * @module
 */

import { changeFilters, checkChangeQuery } from "../catalog/changes.ts";
import type { Table, TableRef } from "../catalog/model.ts";
import { objectMembers } from "../ingest/json_object.ts";
import { badShape } from "../ingest/json_rows_errors.ts";
import type { KeyedWrite, Store } from "../store/store.ts";

/** The query of a change: its parameters, filters and `all` among them. */
export type ChangeParams = URLSearchParams | readonly (readonly [string, string])[];

/**
 * Sets the columns of the JSON object `body` (`{"column": value, …}`) in the rows the
 * filters of `params` choose; `{updated}` is how many rows matched.
 *
 * @throws {ApiError} 400 for a query without a filter (unless `all=true`), a parameter of
 * the read that chooses no rows, a bad filter, or a body that is not a non-empty JSON
 * object; then as {@link Store.updateRecords}.
 */
export async function updateRecords(
  deps: { readonly store: Store },
  ref: TableRef,
  params: ChangeParams,
  body: string,
  keyed?: KeyedWrite<{ table: Table; updated: number }>,
): Promise<{ table: Table; updated: number }> {
  const query = checkChangeQuery(params);
  const changes = objectMembers(body);
  if (changes.length === 0) {
    throw badShape('it names no column to change; send {"column": value, …}');
  }
  return await deps.store.records.update(
    ref,
    changes,
    (table) => changeFilters(query, table.columns),
    keyed,
  );
}

/**
 * Deletes the rows the filters of `params` choose; `{deleted}` is how many.
 *
 * @throws {ApiError} 400 as {@link updateRecords} for the query; then as
 * {@link Store.deleteRecords}.
 */
export async function deleteRecords(
  deps: { readonly store: Store },
  ref: TableRef,
  params: ChangeParams,
  keyed?: KeyedWrite<{ table: Table; deleted: number }>,
): Promise<{ table: Table; deleted: number }> {
  const query = checkChangeQuery(params);
  return await deps.store.records.delete(
    ref,
    (table) => changeFilters(query, table.columns),
    keyed,
  );
}
