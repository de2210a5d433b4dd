/**
 * Changes of records by filter: `UPDATE … SET … WHERE` and `DELETE … WHERE` over one table,
 * each in one transaction, under the table's append locks (shared: loads and other changes
 * go on beside it; DDL waits for it, and it for DDL), and exclusively the tables whose foreign
 * keys the change could break (see {@link underChangeLocks}).
 *
 * What DuckDB 1.5.5 does, and what the client is answered:
 *
 * - A value is cast from its JSON text as an inserted value is (see {@link fromJson}), and
 *   checked before the statement, so one that does not convert is a 422 naming its column.
 * - DuckDB carries out an UPDATE of a primary-key or unique column as a delete and an insert,
 *   checked at the end of the statement: keys that shift onto each other (`id = id + 1`) or
 *   swap are fine, a key that ends up twice is a 409.
 * - A row another table's foreign key references cannot have its primary-key or unique
 *   columns changed at all, even to the value they hold (DuckDB's check is over-eager: it sees
 *   a delete of the referenced key), nor be deleted: 409 saying so. Its other columns can.
 * - Two changes that touch the same row at once: the second to reach it fails ("Conflict on
 *   update!"), as does the second of two that commit the same new key, at its commit; a 409
 *   the client may retry.
 *
 * @module
 */

import { underDeadline } from "./interrupts.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import {
  assign,
  type Assignment,
  type Deleted,
  doesNotFit,
  type Updated,
} from "../shared/assignments.ts";
import type { ColumnChange, KeyedWrite, RowChoice } from "../store.ts";
import { noted, type StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { keepAnswer } from "./idempotency.ts";
import { BoundValues, checkFilterValues, filterCondition } from "./record_filters.ts";
import { foreignKeysReferencing } from "./metadata_constraints.ts";
import { appendLocks, schemaLock, tableLock } from "./store_locks.ts";
import { getTable } from "./tables.ts";
import { DUPLICATE_KEY, WRITE_CONFLICT } from "./engine_errors.ts";
import { engineMessage, qualified, quoteIdent } from "./sql.ts";
import { readAs } from "./values.ts";

export type { Deleted, Updated };

/**
 * Sets the columns `changes` names in the rows `where` chooses, in one transaction, keeping
 * the answer of a keyed write in it.
 *
 * @throws {ApiError} 400 for no change or a filter value its column cannot take; 422 for a key
 * naming no column, a value its column cannot take, a null for a NOT NULL column, a reference to
 * no row; 409 for a duplicate key, a change to a referenced key, or a concurrent change of the
 * same rows.
 */
export function updateRecords(
  context: StoreContext,
  ref: TableRef,
  changes: readonly ColumnChange[],
  where: RowChoice,
  keyedWrite?: KeyedWrite<Updated>,
): Promise<Updated> {
  const keyed = noted(context, keyedWrite);
  if (changes.length === 0) {
    throw ApiError.badRequest("The request body names no column to change");
  }
  const keys = new Set(changes.map((c) => nameKey(c.key)));
  const touches = (column: string) => keys.has(nameKey(column));
  return underChangeLocks(context, ref, touches, async (table) => {
    const filters = where(table);
    const assignments = await assign(table, changes);
    return await changing(context, table, "update", async (session) => {
      await checkFilterValues(session, table, filters);
      await checkValues(session, table, assignments);
      const bound = new BoundValues();
      const set = assignments.map((a) =>
        `${quoteIdent(a.column.name)} = ${
          a.json === null ? "NULL" : fromJson(bound.add(a.json), a.column.type)
        }`
      ).join(", ");
      const condition = filterCondition(table, filters, bound);
      const updated = await session.changes(
        `UPDATE ${qualified(table.schema, table.name)} SET ${set} WHERE ${condition}`,
        bound.values,
      );
      const result = { table, updated };
      if (keyed) await keepAnswer(session, keyed, result);
      return result;
    });
  });
}

/**
 * Deletes the rows `where` chooses, in one transaction, keeping the answer of a keyed write
 * in it.
 *
 * @throws {ApiError} 400 for a filter value its column cannot take; 409 when another table's
 * foreign key references a row, or a concurrent change touches the same rows.
 */
export function deleteRecords(
  context: StoreContext,
  ref: TableRef,
  where: RowChoice,
  keyedWrite?: KeyedWrite<Deleted>,
): Promise<Deleted> {
  const keyed = noted(context, keyedWrite);
  return underChangeLocks(context, ref, () => true, async (table) => {
    const filters = where(table);
    return await changing(context, table, "delete", async (session) => {
      await checkFilterValues(session, table, filters);
      const bound = new BoundValues();
      const condition = filterCondition(table, filters, bound);
      const deleted = await session.changes(
        `DELETE FROM ${qualified(table.schema, table.name)} WHERE ${condition}`,
        bound.values,
      );
      const result = { table, deleted };
      if (keyed) await keepAnswer(session, keyed, result);
      return result;
    });
  });
}

/**
 * Runs `work` on the table as found under its append locks and, exclusively, the locks of the
 * tables whose foreign keys reference a column of it that the change `touches`. DuckDB checks
 * a foreign key only against committed rows and its own transaction's: a row deleted (or its
 * key changed) while another transaction inserts a row referencing it would leave both
 * committed and the reference dangling. Inserts and changes into a referencing table hold its
 * shared lock, so they wait, and it for them. The referencing tables are looked up first, then
 * all the locks taken at once (in their fixed order, so no deadlock) and the look checked
 * again: a foreign key into the table needs its exclusive lock to appear, so what is found
 * under the locks holds until they are let go.
 */
async function underChangeLocks<T>(
  context: StoreContext,
  ref: TableRef,
  touches: (column: string) => boolean,
  work: (table: Table) => Promise<T>,
): Promise<T> {
  const referencing = async (table: Table) =>
    (await context.database.withSession((s) => foreignKeysReferencing(s, table)))
      .filter((fk) => touches(fk.refColumn)).map((fk) => fk.table);
  const same = (a: readonly TableRef[], b: readonly TableRef[]) =>
    a.length === b.length && a.every((r, i) => r.schema === b[i]!.schema && r.name === b[i]!.name);
  for (let attempt = 0;; attempt++) {
    const seen = await referencing(await getTable(context, ref));
    const locks = [
      ...appendLocks(ref),
      ...seen.flatMap((r) => [schemaLock(r.schema, "shared"), tableLock(r, "exclusive")]),
    ];
    const done = await context.locks.run(locks, async () => {
      const table = await getTable(context, ref);
      if (!same(await referencing(table), seen)) return undefined;
      return { result: await work(table) };
    });
    if (done) return done.result;
    if (attempt >= 3) throw ApiError.conflict(`Table "${ref.name}" is changing; try again`);
  }
}

/** Runs `work` in a transaction, explaining what DuckDB refused as the client's answer. */
async function changing<T>(
  { database, readTimeoutMs }: StoreContext,
  table: Table,
  change: "update" | "delete",
  work: (session: Session) => Promise<T>,
): Promise<T> {
  try {
    // The filter is a client's: a change it makes slow is interrupted and rolled back.
    return await database.transaction((session) =>
      underDeadline(session.connection, readTimeoutMs, () => work(session))
    );
  } catch (error) {
    throw explainChangeFailure(table, change, error);
  }
}

/**
 * A SQL expression giving the JSON text bound at `placeholder` as a value of `type`, read as
 * `read_json` reads a row's value in an insert: a string's own text for text, base64 for a
 * BLOB, the contract's rule for BOOLEAN and zoned times (values.ts).
 */
function fromJson(placeholder: string, type: string): string {
  const json = `CAST(${placeholder} AS JSON)`;
  if (type === "JSON") return json;
  const read = readAs(type);
  // A JSON value read as text is the string's own text (as read_json gives it), not JSON.
  const raw = read.type === "VARCHAR"
    ? `json_extract_string(${json}, '$')`
    : `CAST(${json} AS ${read.type})`;
  return read.expression(raw);
}

/** 422 naming each column whose value does not convert to its type, in one statement. */
async function checkValues(
  session: Session,
  table: Table,
  assignments: readonly Assignment[],
): Promise<void> {
  const checked = assignments.filter((a) => a.json !== null && a.column.type !== "JSON");
  if (checked.length === 0) return;
  const bound = new BoundValues();
  // try() rather than TRY_CAST: TRY_CAST of JSON to a LIST or STRUCT nulls only the element
  // that fails, so the value would pass and the UPDATE still fail.
  const list = checked.map((a) => `try(${fromJson(bound.add(a.json), a.column.type)}) IS NULL`);
  const [row] = await session.rows(`SELECT [${list.join(", ")}] AS failed`, bound.values);
  const failed = (row?.failed ?? []) as boolean[];
  const problems = checked.filter((_, i) => failed[i]).map((a) => ({
    column: a.column.name,
    message: `Value ${clip(a.json!)} is not a valid ${a.column.type}`,
  }));
  if (problems.length > 0) throw doesNotFit(table, problems);
}

/** `json`, cut to 80 characters for a message. */
function clip(json: string): string {
  return json.length > 80 ? `${json.slice(0, 80)}…` : json;
}

/** Constraint errors of DuckDB 1.5.5, by what they mean. */
const STILL_REFERENCED = /is still referenced by a foreign key/i;
const MISSING_REFERENCE = /foreign key constraint because key "(.*)" does not exist/i;

/** The client's answer for what DuckDB refused in a change; other errors as they are. */
function explainChangeFailure(
  table: Table,
  change: "update" | "delete",
  error: unknown,
): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  const said = engineMessage(error).replace(/\. If this is an unexpected .*$/, "");
  const name = `"${table.name}"`;
  if (STILL_REFERENCED.test(error.message)) {
    return ApiError.conflict(
      change === "delete"
        ? `Rows of table ${name} are referenced by another table's foreign key, so they ` +
          `cannot be deleted; delete or change the referencing rows first (${said})`
        : `The change alters a primary-key or unique column of rows of table ${name} that ` +
          "another table's foreign key references, which the database refuses even when " +
          `the value stays the same; leave those columns out of the change (${said})`,
    );
  }
  const missing = MISSING_REFERENCE.exec(error.message);
  if (missing) {
    // Data that does not fit, as an insert's missing reference is.
    return ApiError.invalidData(
      `The change makes rows of table ${name} reference a row that does not exist: ` +
        `key "${missing[1]}" is not in the referenced table`,
    );
  }
  if (DUPLICATE_KEY.test(error.message)) {
    return ApiError.conflict(
      `The change gives rows of table ${name} a primary or unique key another row has (${said})`,
    );
  }
  if (/NOT NULL constraint/i.test(error.message)) {
    return ApiError.invalidData(`The change does not fit table ${name}: ${said}`);
  }
  if (/Conversion Error|Could not convert/i.test(error.message)) {
    return ApiError.invalidData(`The change does not fit table ${name}: ${said}`);
  }
  if (WRITE_CONFLICT.test(error.message)) {
    return ApiError.conflict(
      `Another change to the same rows of table ${name} was under way; nothing was ` +
        "changed, try again",
    );
  }
  return error;
}
