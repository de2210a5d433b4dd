/**
 * Changes of records by filter (`PATCH` and `DELETE` of `/records`), written once: the
 * statement each runs, the checks before it, and the client's answer for what the engine
 * refused. An engine gives a {@link RecordChanges}: how a change takes its table (locks,
 * transaction, deadline, a keyed write's answer), how values bind and cast, and what its
 * errors mean ({@link ChangeRefusal}).
 *
 * @module
 */

import type { Filter } from "../../catalog/filters.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { ColumnChange, KeyedWrite, RecordStore, RowChoice } from "../store.ts";
import { assign, type Assignment, type Deleted, doesNotFit, type Updated } from "./assignments.ts";
import { qualified, quoteIdent } from "./sql.ts";

/** Which change runs. */
export type Change = "update" | "delete";

/** What an engine gives the changes: `S` its session, `B` its list of bound values. */
export interface RecordChanges<S, B> {
  /**
   * `work` in one transaction on the table at `ref` as found, under the change's locks and the
   * store's deadline, keeping `keyed`'s answer; `touches` the columns set (all, to delete).
   */
  onTable<R>(
    ref: TableRef,
    change: Change,
    touches: (column: string) => boolean,
    keyed: KeyedWrite<R> | undefined,
    work: (session: S, table: Table) => Promise<R>,
  ): Promise<R>;
  /** Refuses (400) a filter value its column cannot take. */
  checkFilters(session: S, table: Table, filters: readonly Filter[]): Promise<void>;
  /** The assignments whose value does not convert to their column's type. */
  failing(session: S, assignments: readonly Assignment[]): Promise<readonly Assignment[]>;
  /** A new, empty list of bound values; `bind` adds one and gives its placeholder. */
  values(): B;
  bind(values: B, json: string): string;
  /** The WHERE condition of `filters`, its values bound in `values`. */
  condition(table: Table, filters: readonly Filter[], values: B): string;
  /** A SQL expression of the JSON text at `placeholder` as a value of `type`. */
  fromJson(placeholder: string, type: string): string;
  /** Runs the change's statement: how many rows it changed. */
  run(session: S, table: Table, change: Change, sql: string, values: B): Promise<number>;
}

/**
 * Sets the columns `changes` names in the rows `where` chooses, in one transaction, keeping
 * the answer of a keyed write in it.
 *
 * @throws {ApiError} 400 for no change or a filter value its column cannot take; 422 for a key
 * naming no column, a value its column cannot take, a null for a NOT NULL column, a reference to
 * no row; 409 for a duplicate key or a change to a referenced key; others as the engine says.
 */
export async function updateRecords<S, B>(
  engine: RecordChanges<S, B>,
  ref: TableRef,
  changes: readonly ColumnChange[],
  where: RowChoice,
  keyed?: KeyedWrite<Updated>,
): Promise<Updated> {
  if (changes.length === 0) {
    throw ApiError.badRequest("The request body names no column to change");
  }
  const keys = new Set(changes.map((c) => nameKey(c.key)));
  const touches = (column: string) => keys.has(nameKey(column));
  return await engine.onTable(ref, "update", touches, keyed, async (session, table) => {
    const filters = where(table);
    const assignments = await assign(table, changes);
    await engine.checkFilters(session, table, filters);
    await checkAssignments(engine, session, table, assignments);
    const values = engine.values();
    const set = assignments.map((a) =>
      `${quoteIdent(a.column.name)} = ${
        a.json === null ? "NULL" : engine.fromJson(engine.bind(values, a.json), a.column.type)
      }`
    ).join(", ");
    const condition = engine.condition(table, filters, values);
    const sql = `UPDATE ${qualified(table.schema, table.name)} SET ${set} WHERE ${condition}`;
    return { table, updated: await engine.run(session, table, "update", sql, values) };
  });
}

/** {@link updateRecords} and {@link deleteRecords} on `engine`: a store's `update`, `delete`. */
export function recordChangesOn<S, B>(
  engine: RecordChanges<S, B>,
): Pick<RecordStore, "update" | "delete"> {
  return {
    update: (ref, changes, where, keyed) => updateRecords(engine, ref, changes, where, keyed),
    delete: (ref, where, keyed) => deleteRecords(engine, ref, where, keyed),
  };
}

/**
 * Deletes the rows `where` chooses, in one transaction, keeping the answer of a keyed write
 * in it.
 *
 * @throws {ApiError} 400 for a filter value its column cannot take; 409 when another table's
 * foreign key references a row; others as the engine says.
 */
export async function deleteRecords<S, B>(
  engine: RecordChanges<S, B>,
  ref: TableRef,
  where: RowChoice,
  keyed?: KeyedWrite<Deleted>,
): Promise<Deleted> {
  return await engine.onTable(ref, "delete", () => true, keyed, async (session, table) => {
    const filters = where(table);
    await engine.checkFilters(session, table, filters);
    const values = engine.values();
    const condition = engine.condition(table, filters, values);
    const sql = `DELETE FROM ${qualified(table.schema, table.name)} WHERE ${condition}`;
    return { table, deleted: await engine.run(session, table, "delete", sql, values) };
  });
}

/** 422 naming each column whose value does not convert to its type. */
async function checkAssignments<S, B>(
  engine: RecordChanges<S, B>,
  session: S,
  table: Table,
  assignments: readonly Assignment[],
): Promise<void> {
  const failing = await engine.failing(session, assignments.filter((a) => a.json !== null));
  const problems = failing.map((a) => ({
    column: a.column.name,
    message: `Value ${clip(a.json!)} is not a valid ${a.column.type}`,
  }));
  if (problems.length > 0) throw doesNotFit(table, problems);
}

/** `json`, cut to 80 characters for a message. */
function clip(json: string): string {
  return json.length > 80 ? `${json.slice(0, 80)}…` : json;
}

/**
 * What an engine's refusal of a change means, with what it `said` (its message, cleaned):
 * - `referenced`: a key another table's foreign key references would change or go;
 *   `evenUnchanged` when the engine refuses even setting such a key to the value it holds;
 * - `missing`: a value no referenced row has; `what` says which;
 * - `duplicate`: a primary or unique key another row has;
 * - `doesNotFit`: a value the column cannot take (a null, a check, a conversion);
 * - `conflict`: another change of the same rows was under way.
 */
export type ChangeRefusal =
  | { readonly kind: "referenced"; readonly said: string; readonly evenUnchanged: boolean }
  | { readonly kind: "missing"; readonly what: string }
  | { readonly kind: "duplicate" | "doesNotFit"; readonly said: string }
  | { readonly kind: "conflict" };

/**
 * The client's answer for `error` in a change of `table`, when `meaning` (the engine's) says
 * it is a refusal; other errors as they are.
 */
export function explainChangeFailure(
  table: Table,
  change: Change,
  error: unknown,
  meaning: (error: unknown) => ChangeRefusal | undefined,
): unknown {
  const refusal = meaning(error);
  const name = `"${table.name}"`;
  switch (refusal?.kind) {
    case "referenced":
      return ApiError.conflict(
        change === "delete"
          ? `Rows of table ${name} are referenced by another table's foreign key, so they ` +
            `cannot be deleted; delete or change the referencing rows first (${refusal.said})`
          : refusal.evenUnchanged
          ? `The change alters a primary-key or unique column of rows of table ${name} that ` +
            "another table's foreign key references, which the database refuses even when " +
            `the value stays the same; leave those columns out of the change (${refusal.said})`
          : `The change alters a key of rows of table ${name} that another table's foreign ` +
            `key references; change the referencing rows first (${refusal.said})`,
      );
    case "missing":
      // Data that does not fit, as an insert's missing reference is.
      return ApiError.invalidData(
        `The change makes rows of table ${name} reference a row that does not exist: ${refusal.what}`,
      );
    case "duplicate":
      return ApiError.conflict(
        `The change gives rows of table ${name} a primary or unique key another row has (${refusal.said})`,
      );
    case "doesNotFit":
      return ApiError.invalidData(`The change does not fit table ${name}: ${refusal.said}`);
    case "conflict":
      return ApiError.conflict(
        `Another change to the same rows of table ${name} was under way; nothing was ` +
          "changed, try again",
      );
  }
  return error;
}
