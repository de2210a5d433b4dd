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
import { ApiError } from "../../errors.ts";
import type { Assignment } from "../shared/assignments.ts";
import {
  type ChangeRefusal,
  explainChangeFailure,
  type RecordChanges,
} from "../shared/record_changes.ts";
import { noted, type StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { keepAnswer } from "./idempotency.ts";
import { BoundValues, checkFilterValues, filterCondition } from "./record_filters.ts";
import { foreignKeysReferencing } from "./metadata_constraints.ts";
import { appendLocks, schemaLock, tableLock } from "./store_locks.ts";
import { getTable } from "./tables.ts";
import { DUPLICATE_KEY, WRITE_CONFLICT } from "./engine_errors.ts";
import { engineMessage } from "./sql.ts";
import { readAs } from "./values.ts";

/**
 * The changes of records by filter (PATCH and DELETE, shared/record_changes.ts) on DuckDB;
 * 409 also for a concurrent change of the same rows.
 */
export function duckdbRecordChanges(context: StoreContext): RecordChanges<Session, BoundValues> {
  return {
    onTable: (ref, change, touches, keyed, work) => {
      noted(context, keyed);
      return underChangeLocks(context, ref, touches, async (table) => {
        try {
          // The filter is a client's: a change it makes slow is interrupted and rolled back.
          return await context.database.transaction((session) =>
            underDeadline(session.connection, context.readTimeoutMs, async () => {
              return await keepAnswer(session, keyed, await work(session, table));
            })
          );
        } catch (error) {
          throw explainChangeFailure(table, change, error, changeRefusal);
        }
      });
    },
    checkFilters: checkFilterValues,
    failing,
    values: () => new BoundValues(),
    bind: (values, json) => values.add(json),
    condition: filterCondition,
    fromJson,
    run: (session, _table, _change, sql, values) => session.changes(sql, values.values),
  };
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

/** The assignments whose value does not convert to their column's type, in one statement. */
async function failing(
  session: Session,
  assignments: readonly Assignment[],
): Promise<Assignment[]> {
  const checked = assignments.filter((a) => a.column.type !== "JSON");
  if (checked.length === 0) return [];
  const bound = new BoundValues();
  // try() rather than TRY_CAST: TRY_CAST of JSON to a LIST or STRUCT nulls only the element
  // that fails, so the value would pass and the UPDATE still fail.
  const list = checked.map((a) => `try(${fromJson(bound.add(a.json), a.column.type)}) IS NULL`);
  const [row] = await session.rows(`SELECT [${list.join(", ")}] AS failed`, bound.values);
  const failed = (row?.failed ?? []) as boolean[];
  return checked.filter((_, i) => failed[i]);
}

/** Constraint errors of DuckDB 1.5.5, by what they mean. */
const STILL_REFERENCED = /is still referenced by a foreign key/i;
const MISSING_REFERENCE = /foreign key constraint because key "(.*)" does not exist/i;

/** What DuckDB's refusal of a change means, if it is one. */
function changeRefusal(error: unknown): ChangeRefusal | undefined {
  if (error instanceof ApiError || !(error instanceof Error)) return undefined;
  const said = engineMessage(error).replace(/\. If this is an unexpected .*$/, "");
  // DuckDB's check is over-eager: it sees a change of a referenced key as its delete.
  if (STILL_REFERENCED.test(error.message)) {
    return { kind: "referenced", said, evenUnchanged: true };
  }
  const missing = MISSING_REFERENCE.exec(error.message);
  if (missing) {
    return { kind: "missing", what: `key "${missing[1]}" is not in the referenced table` };
  }
  if (DUPLICATE_KEY.test(error.message)) return { kind: "duplicate", said };
  if (/NOT NULL constraint|Conversion Error|Could not convert/i.test(error.message)) {
    return { kind: "doesNotFit", said };
  }
  if (WRITE_CONFLICT.test(error.message)) return { kind: "conflict" };
  return undefined;
}
