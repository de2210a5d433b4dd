/**
 * Tables: create (from a definition or a template), read, list, update to a wanted
 * definition, delete.
 *
 * @module
 */

import { checkPlanLimits, planTable } from "../catalog/definition.ts";
import { ApiError, type ErrorDetail } from "../errors.ts";
import type { Table, TableDefinition, TableRef } from "../catalog/model.ts";
import { planUpdate, type TableUpdate, type TableUpdateRequest } from "../catalog/update.ts";
import { type TableChange, tableChanges, type WantedTable } from "../catalog/table_changes.ts";
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

/** What a dry run of an update answers. */
export interface UpdatePreview {
  readonly dry_run: true;
  /** The table as the update would leave it; null when its rows refuse it. */
  readonly table: Table | null;
  /** What the update changes, in the order {@link tableChanges} gives. */
  readonly changes: TableChange[];
  /** The rows (or columns) that would not fit, as the update's refusal names them. */
  readonly errors: readonly ErrorDetail[];
  /** The refusal's message, when refused. */
  readonly message?: string;
}

/**
 * What {@link updateTable} would do, carried out and rolled back: the table as it would be
 * and the list of changes; when existing rows do not fit (422 `invalid_data`, or a 409 naming
 * rows) those rows and the changes planned. Any other refusal is thrown as the update's.
 */
export async function previewUpdate(
  store: Store,
  ref: TableRef,
  wanted: TableUpdateRequest,
  options: Pick<UpdateTableOptions, "expect"> = {},
): Promise<UpdatePreview> {
  let seen: { current: Table; update: TableUpdate } | undefined;
  try {
    const { table } = await store.tables.update(
      ref,
      (current) => {
        options.expect?.(current);
        const update = planUpdate(current, wanted);
        checkPlanLimits(update.plan, store);
        seen = { current, update };
        return update;
      },
      undefined,
      true,
    );
    return { dry_run: true, table, changes: tableChanges(seen!.current, table), errors: [] };
  } catch (error) {
    const rows = error instanceof ApiError &&
      (error.type === "invalid_data" ||
        (error.type === "conflict" && error.details?.some((d) => d.row !== undefined)));
    if (!rows || !seen) throw error;
    const types = await store.tables.columnTypes(seen.update.plan)
      .catch(() => seen!.update.plan.columns.map((c) => c.typeText));
    return {
      dry_run: true,
      table: null,
      changes: tableChanges(seen.current, wantedTable(seen.update, types)),
      errors: error.details ?? [],
      message: error.message,
    };
  }
}

/** The table an update plans, its columns' types as the engine names them (`types`). */
function wantedTable(update: TableUpdate, types: readonly string[]): WantedTable {
  const { plan, sources } = update;
  return {
    name: plan.ref.name,
    schema: plan.ref.schema,
    columns: plan.columns.map((c, i) => ({
      ...(sources[i] === undefined ? {} : { id: sources[i] }),
      name: c.name,
      type: types[i] ?? c.typeText,
      default: c.default,
      is_nullable: c.nullable,
    })),
    constraints: {
      primary_key: plan.primaryKey &&
        { name: plan.primaryKey.name, columns: [...plan.primaryKey.columns] },
      unique: plan.unique.map((k) => ({ name: k.name, columns: [...k.columns] })),
      foreign_keys: plan.foreignKeys.map((f) => ({
        name: f.name,
        column: f.column,
        reference_table: f.reference.name,
        reference_column: f.referenceColumn,
        reference_schema: f.reference.schema,
      })),
    },
  };
}

/** Drops a table (409 when another table's foreign key references it); returns its ref. */
export async function deleteTable(
  store: Store,
  ref: TableRef,
  keyed?: KeyedWrite<TableRef>,
): Promise<TableRef> {
  return await store.tables.drop(ref, keyed);
}
