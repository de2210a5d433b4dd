/**
 * Tables: create (from a definition or a template), read, list, update to a wanted
 * definition, delete.
 *
 * @module
 */

import { checkPlanLimits, planTable } from "../catalog/definition.ts";
import type { Table, TableDefinition, TableRef } from "../catalog/model.ts";
import { planUpdate, type TableUpdateRequest } from "../catalog/update.ts";
import type {
  KeyedWrite,
  ListTablesOptions,
  Store,
  TableListing,
  UpdateHow,
} from "../store/store.ts";
import { oneDefinition, planFromTemplate, type TemplateUse } from "./templates.ts";

/** How a table is created. */
export interface CreateTableOptions {
  /** Make it from this template instead of a definition (400 when both are given). */
  readonly template?: TemplateUse;
  /** Return an existing table instead of failing with 409. */
  readonly ifNotExists: boolean;
  readonly keyed?: KeyedWrite<{ readonly table: Table; readonly created: boolean }>;
}

/** Creates the table at `ref` from `definition` (absent: no columns) or a template. */
export async function createTable(
  store: Store,
  ref: TableRef,
  definition: TableDefinition | null | undefined,
  options: CreateTableOptions,
): Promise<{ readonly table: Table; readonly created: boolean }> {
  const fromTemplate = await planFromTemplate(store, ref, options.template);
  const plan = oneDefinition(fromTemplate, definition) ??
    planTable(ref, definition ?? {}, store.maxColumns);
  checkPlanLimits(plan, store);
  return await store.tables.create(plan, {
    ifNotExists: options.ifNotExists,
    keyed: options.keyed,
  });
}

/** One table; 404 when the schema or the table does not exist. */
export async function getTable(store: Store, ref: TableRef): Promise<Table> {
  return await store.tables.get(ref);
}

/** A page of tables in schema, then name, order, with the count of all matches. */
export async function listTables(store: Store, options: ListTablesOptions): Promise<TableListing> {
  return await store.tables.list(options);
}

/** How a table is updated. */
export interface UpdateTableOptions {
  /**
   * Judges the table as the update finds it, under its lock, before anything is planned:
   * throws to refuse the update (an `If-Match` that names another definition).
   */
  readonly expect?: (current: Table) => void;
  readonly keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>;
}

/**
 * Updates the table at `ref` to the `wanted` definition in one transaction, keeping its
 * rows and column ids; 404 when it does not exist, 409 or 422 for an update it cannot make.
 */
export async function updateTable(
  store: Store,
  ref: TableRef,
  wanted: TableUpdateRequest,
  options: UpdateTableOptions = {},
): Promise<{ table: Table; how: UpdateHow }> {
  return await store.tables.update(ref, (current) => {
    // Judged under the table's lock, against the definition the update starts from.
    options.expect?.(current);
    const update = planUpdate(current, wanted);
    checkPlanLimits(update.plan, store);
    return update;
  }, options.keyed);
}

/** Drops a table (409 when another table's foreign key references it); returns its ref. */
export async function deleteTable(
  store: Store,
  ref: TableRef,
  keyed?: KeyedWrite<TableRef>,
): Promise<TableRef> {
  return await store.tables.drop(ref, keyed);
}
