/**
 * Changes of records by filter on PostgreSQL: `UPDATE … SET … WHERE` and `DELETE … WHERE`
 * over one table, each in one transaction under the table's shared lock (DDL on any instance
 * waits for it, and it for DDL; loads and other changes go on beside it, PostgreSQL's row
 * locks ordering changes of the same rows).
 *
 * What the client is answered, as on the DuckDB store:
 *
 * - A filter value its column cannot take is 400; a key naming no column, a value its column
 *   cannot take (checked before the statement, every one named) or a null for a NOT NULL
 *   column is 422.
 * - A duplicate primary or unique key is 409. PostgreSQL checks a key at each row, so a change
 *   whose keys shift onto each other (`id = id + 1` over several rows) can be 409 where DuckDB
 *   takes it.
 * - A value no referenced row has is 422, as for an insert; a change or delete of a key other
 *   rows reference is 409. PostgreSQL lets a referenced key be set to the value it holds,
 *   which DuckDB refuses.
 * - A change runs under the store's deadline from its table's lock on, as a read does
 *   (read_bounds.ts): its filter is a client's read of the table. Past it, 408 and nothing
 *   is changed.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { ApiError, type ErrorDetail } from "../../errors.ts";
import {
  assign,
  type Assignment,
  type Deleted,
  doesNotFit,
  type Updated,
} from "../shared/assignments.ts";
import type { ColumnChange, KeyedWrite, RowChoice } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Param, Session } from "./database.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import {
  bind,
  checkValues,
  evaluates,
  filterCondition,
  filterValueChecks,
  textType,
  typedValue,
} from "./record_filters.ts";
import { onDescribedTable } from "./record_reads.ts";
import { boundRead, pastDeadline } from "./read_bounds.ts";
import { qualified, quoteIdent } from "./sql.ts";

export type { Deleted, Updated };

/**
 * Sets the columns `changes` names in the rows `where` chooses, in one transaction, keeping
 * the answer of a keyed write in it.
 *
 * @throws {ApiError} 400 for no change or a filter value its column cannot take; 422 for a key
 * naming no column, a value its column cannot take, a null for a NOT NULL column, a reference to
 * no row; 409 for a duplicate key or a change to a referenced key; 404 for no table; 408 past
 * the deadline.
 */
export function updateRecords(
  context: StoreContext,
  ref: TableRef,
  changes: readonly ColumnChange[],
  where: RowChoice,
  keyed?: KeyedWrite<Updated>,
): Promise<Updated> {
  if (changes.length === 0) {
    return Promise.reject(ApiError.badRequest("The request body names no column to change"));
  }
  return changeTable(context, ref, keyed, async (session, table) => {
    const filters = where(table);
    const assignments = await assign(table, changes);
    await checkValues(session, filterValueChecks(table, filters));
    await checkAssignments(session, table, assignments);
    const params: unknown[] = [];
    const set = assignments.map((a) =>
      `${quoteIdent(a.column.name)} = ${
        a.json === null ? "NULL" : fromJson(bind(params, a.json), a.column.type)
      }`
    ).join(", ");
    const condition = filterCondition(table, filters, params);
    const updated = await changing(
      table,
      "update",
      () =>
        session.run(
          `UPDATE ${qualified(table.schema, table.name)} SET ${set} WHERE ${condition}`,
          params as Param[],
        ),
    );
    return { table, updated };
  });
}

/**
 * Deletes the rows `where` chooses, in one transaction, keeping the answer of a keyed write
 * in it.
 *
 * @throws {ApiError} 400 for a filter value its column cannot take; 409 when another table's
 * foreign key references a row; 404 for no table; 408 past the deadline.
 */
export function deleteRecords(
  context: StoreContext,
  ref: TableRef,
  where: RowChoice,
  keyed?: KeyedWrite<Deleted>,
): Promise<Deleted> {
  return changeTable(context, ref, keyed, async (session, table) => {
    const filters = where(table);
    await checkValues(session, filterValueChecks(table, filters));
    const params: unknown[] = [];
    const condition = filterCondition(table, filters, params);
    const deleted = await changing(
      table,
      "delete",
      () =>
        session.run(
          `DELETE FROM ${qualified(table.schema, table.name)} WHERE ${condition}`,
          params as Param[],
        ),
    );
    return { table, deleted };
  });
}

/**
 * `work` on the described table at `ref` in one transaction, a keyed write's key claimed
 * first, the deadline set next and its answer kept last.
 */
async function changeTable<R>(
  { database, readTimeoutMs }: StoreContext,
  ref: TableRef,
  keyed: KeyedWrite<R> | undefined,
  work: (session: Session, table: Table) => Promise<R>,
): Promise<R> {
  try {
    return await keyedTransaction(database, keyed, async (session) => {
      await boundRead(session, readTimeoutMs);
      return await onDescribedTable(session, ref, async (table) => {
        const result = await work(session, table);
        if (keyed) await keepAnswer(session, keyed, result);
        return result;
      });
    });
  } catch (error) {
    throw pastDeadline(error, readTimeoutMs);
  }
}

/**
 * A SQL expression giving the JSON text bound at `placeholder` as a value of `type`, as an
 * inserted value is read: a string's own text (a number's or boolean's text) cast to the
 * type, base64 for bytea, json and jsonb as they are, a JSON array element by element for an
 * array type.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fromJson } from "./record_changes.ts";
 *
 * assert.equal(fromJson("$1", "integer"), "($1::json #>> '{}')::integer");
 * assert.equal(fromJson("$1", "text"), "($1::json #>> '{}')");
 * assert.equal(fromJson("$1", "bit(3)"), "($1::json #>> '{}')::bit varying");
 * ```
 */
export function fromJson(placeholder: string, type: string): string {
  if (type === "json" || type === "jsonb") return `${placeholder}::${type}`;
  if (type.endsWith("[]")) {
    return `ARRAY(SELECT ${
      typedValue(type.slice(0, -2), `" e"`)
    } FROM json_array_elements_text(${placeholder}::json) WITH ORDINALITY AS " a"(" e", " o") ORDER BY " o")`;
  }
  // An explicit cast to bit(n) or bit varying(n) pads or cuts the value; the column's own
  // assignment cast refuses a wrong length instead (22026), as a load does.
  const assigned = /^bit( varying)?\(\d+\)$/.test(type) ? "bit varying" : type;
  return typedValue(assigned, `(${placeholder}::json #>> '{}')`);
}

/** 422 naming each column whose value does not convert to its type. */
async function checkAssignments(
  session: Session,
  table: Table,
  assignments: readonly Assignment[],
): Promise<void> {
  const checked = assignments.filter((a) =>
    a.json !== null && !textType(a.column.type) && a.column.type !== "json" &&
    a.column.type !== "jsonb"
  );
  if (checked.length === 0) return;
  const probe = (list: readonly Assignment[]) => {
    const params: unknown[] = [];
    const values = list.map((a) => fromJson(bind(params, a.json), a.column.type));
    return evaluates(session, `SELECT ${values.join(", ")}`, params);
  };
  if (await probe(checked)) return;
  const problems: ErrorDetail[] = [];
  for (const a of checked) {
    if (await probe([a])) continue;
    problems.push({
      column: a.column.name,
      message: `Value ${clip(a.json!)} is not a valid ${a.column.type}`,
    });
  }
  if (problems.length > 0) throw doesNotFit(table, problems);
}

/** `json`, cut to 80 characters for a message. */
function clip(json: string): string {
  return json.length > 80 ? `${json.slice(0, 80)}…` : json;
}

/** Runs a change's statement, explaining what PostgreSQL refused as the client's answer. */
async function changing<T>(
  table: Table,
  change: "update" | "delete",
  statement: () => Promise<T>,
): Promise<T> {
  try {
    return await statement();
  } catch (error) {
    throw explainChangeFailure(table, change, error);
  }
}

/** The client's answer for what PostgreSQL refused in a change; other errors as they are. */
function explainChangeFailure(
  table: Table,
  change: "update" | "delete",
  error: unknown,
): unknown {
  if (!(error instanceof Error)) return error;
  const { code, detail } = error as { code?: string; detail?: string };
  const said = detail ? `${error.message} (${detail})` : error.message;
  const name = `"${table.name}"`;
  switch (code) {
    case "23503":
      if (/^insert or update/.test(error.message)) {
        // Data that does not fit, as an insert's missing reference is.
        return ApiError.invalidData(
          `The change makes rows of table ${name} reference a row that does not exist: ${
            detail ?? error.message
          }`,
        );
      }
      return ApiError.conflict(
        change === "delete"
          ? `Rows of table ${name} are referenced by another table's foreign key, so they ` +
            `cannot be deleted; delete or change the referencing rows first (${said})`
          : `The change alters a key of rows of table ${name} that another table's foreign ` +
            `key references; change the referencing rows first (${said})`,
      );
    case "23505":
      return ApiError.conflict(
        `The change gives rows of table ${name} a primary or unique key another row has (${said})`,
      );
    case "23502":
    case "23514":
      return ApiError.invalidData(`The change does not fit table ${name}: ${said}`);
  }
  if (code?.startsWith("22")) {
    return ApiError.invalidData(`The change does not fit table ${name}: ${said}`);
  }
  if (code === "40001" || code === "40P01") {
    return ApiError.conflict(
      `Another change to the same rows of table ${name} was under way; nothing was ` +
        "changed, try again",
    );
  }
  return error;
}
