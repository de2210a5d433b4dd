/**
 * Changes of records by filter on PostgreSQL: `UPDATE … SET … WHERE` and `DELETE … WHERE`
 * over one table, each in one transaction under the table's shared lock (DDL on any instance
 * waits for it, and it for DDL; loads and other changes go on beside it, PostgreSQL's row
 * locks ordering changes of the same rows).
 *
 * What the client is answered beyond shared/record_changes.ts's rules:
 *
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

import type { Assignment } from "../shared/assignments.ts";
import {
  type ChangeRefusal,
  explainChangeFailure,
  type RecordChanges,
} from "../shared/record_changes.ts";
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

/**
 * The changes of records by filter (PATCH and DELETE, shared/record_changes.ts) on
 * PostgreSQL; 404 for no table, 408 past the deadline.
 */
export function postgresRecordChanges(context: StoreContext): RecordChanges<Session, unknown[]> {
  return {
    // The keyed write's key claimed first, the deadline set next, its answer kept last.
    async onTable(ref, _change, _touches, keyed, work) {
      const { database, readTimeoutMs } = context;
      try {
        return await keyedTransaction(database, keyed, async (session) => {
          await boundRead(session, readTimeoutMs);
          return await onDescribedTable(session, context.descriptions, ref, async (table) => {
            return await keepAnswer(session, keyed, await work(session, table));
          });
        });
      } catch (error) {
        throw pastDeadline(error, readTimeoutMs);
      }
    },
    checkFilters: (session, table, filters) =>
      checkValues(session, filterValueChecks(table, filters)),
    failing,
    values: () => [],
    bind,
    condition: filterCondition,
    fromJson,
    async run(session, table, change, sql, params) {
      try {
        return await session.run(sql, params as Param[]);
      } catch (error) {
        // Only the statement's errors: PostgreSQL says what it refused by SQLSTATE.
        throw explainChangeFailure(table, change, error, changeRefusal);
      }
    },
  };
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

/** The assignments whose value does not convert to their column's type. */
async function failing(
  session: Session,
  assignments: readonly Assignment[],
): Promise<Assignment[]> {
  const checked = assignments.filter((a) =>
    !textType(a.column.type) && a.column.type !== "json" && a.column.type !== "jsonb"
  );
  if (checked.length === 0) return [];
  const probe = (list: readonly Assignment[]) => {
    const params: unknown[] = [];
    const values = list.map((a) => fromJson(bind(params, a.json), a.column.type));
    return evaluates(session, `SELECT ${values.join(", ")}`, params);
  };
  if (await probe(checked)) return [];
  const failed: Assignment[] = [];
  for (const a of checked) if (!await probe([a])) failed.push(a);
  return failed;
}

/** What PostgreSQL's refusal of a change means, by its SQLSTATE, if it is one. */
function changeRefusal(error: unknown): ChangeRefusal | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, detail } = error as { code?: string; detail?: string };
  const said = detail ? `${error.message} (${detail})` : error.message;
  switch (code) {
    case "23503":
      if (/^insert or update/.test(error.message)) {
        return { kind: "missing", what: detail ?? error.message };
      }
      return { kind: "referenced", said, evenUnchanged: false };
    case "23505":
      return { kind: "duplicate", said };
    case "23502":
    case "23514":
      return { kind: "doesNotFit", said };
  }
  if (code?.startsWith("22")) return { kind: "doesNotFit", said };
  if (code === "40001" || code === "40P01") return { kind: "conflict" };
  return undefined;
}
