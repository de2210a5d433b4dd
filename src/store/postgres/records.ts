/**
 * Inserting rows into an existing PostgreSQL table: staged (read, checked, converted) by the
 * DuckDB staging, then copied in, in one transaction that holds the table's lock shared, so
 * that inserts into one table run side by side and a change of its definition waits.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { StagingRows } from "../duckdb/mod.ts";
import { checkConflictKey } from "../shared/conflict_key.ts";
import type { ArrivingRows, KeyedWrite, LoadCounts, OnConflict } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { copyStaged } from "./copy_rows.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { explainKeyConflict, isKeyConflict } from "./key_conflicts.ts";
import { schemaLock, tableLock, takeLocks, upsertLock } from "./locks.ts";
import { describeTables } from "./metadata_describe.ts";
import { existingTable } from "./tables.ts";

/** What an insert answers: the table and the counts. */
export type Inserted = { table: Table } & LoadCounts;

/**
 * Inserts arriving rows (once they have all arrived) into an existing table, in one
 * transaction: every row, or none. 404 for a missing table; 422 for `skip` or `update` on
 * a table without a key to match rows by, and for rows that do not fit (with row-level
 * details); 409 for a key that exists already or repeats within the rows under `fail`.
 */
export async function insertRecords(
  { database, staging }: StoreContext,
  ref: TableRef,
  rows: ArrivingRows,
  onConflict: OnConflict,
  keyed?: KeyedWrite<Inserted>,
): Promise<Inserted> {
  const source = await rows.whole();
  return await staging.withRows(source, async (held) => {
    try {
      return await load(held);
    } catch (error) {
      // Which rows clash is asked after the rollback, as on DuckDB.
      if (onConflict !== "fail" || !isKeyConflict(error)) throw error;
      throw await explainKeyConflict(database, ref, held, error);
    }
  });

  function load(held: StagingRows): Promise<Inserted> {
    return keyedTransaction(database, keyed, async (session) => {
      await takeLocks(session, [
        schemaLock(ref.schema, "shared"),
        tableLock(ref, "shared"),
        ...(onConflict === "fail" ? [] : [upsertLock(ref)]),
      ]);
      const table = (await describeTables(session, [await existingTable(session, ref)]))[0]!;
      checkConflictKey(table, onConflict);
      const staged = await held.stage(table, onConflict);
      try {
        const result = { table, ...await copyStaged(session, table, staged, onConflict) };
        if (keyed) await keepAnswer(session, keyed, result);
        return result;
      } finally {
        await Deno.remove(staged.path).catch(() => {});
      }
    });
  }
}
