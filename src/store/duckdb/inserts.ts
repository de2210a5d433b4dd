/**
 * Inserting arriving rows into an existing table: the one place that chooses among the
 * ways to do it (see {@link insertRecords}), and the ordinary way, the whole body at once.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { KeyColumn } from "../../catalog/rows.ts";
import { ApiError } from "../../errors.ts";
import type { ArrivingRows, KeyedWrite, LoadCounts, OnConflict, RowsSource } from "../store.ts";
import { checkpointAfterLoad, noted, type StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { DUPLICATE_KEY, WRITE_CONFLICT } from "./engine_errors.ts";
import { keepAnswer } from "./idempotency.ts";
import { MoreKeys } from "./inference.ts";
import { explainLoadFailure } from "./load_errors.ts";
import { keysOutside, mapRowKeys } from "./row_keys.ts";
import { loadRows } from "./rows.ts";
import { checkConflictKey } from "../shared/conflict_key.ts";
import type { Inserted, SmallInserts } from "./small_inserts.ts";
import { type RowsFile, withLocalFile } from "./sources.ts";
import { appendLocks, upsertLocks } from "./store_locks.ts";
import { insertWhileArriving } from "./streamed_inserts.ts";
import { getTable } from "./tables.ts";

/**
 * Inserts arriving rows into an existing table, in one transaction, choosing the way once:
 *
 * 1. With `on_conflict=fail`, a body larger than one part is loaded part by part while it
 *    arrives ({@link insertWhileArriving}).
 * 2. With `on_conflict=fail`, a body small enough to stay in memory, of objects whose keys
 *    are all known, is inserted with others into the same table ({@link SmallInserts}).
 * 3. Anything else, and whatever the first two step aside from, is loaded whole with
 *    `read_json` ({@link insertWhole}).
 *
 * A load of many rows is followed by a checkpoint.
 */
export async function insertRecords(
  context: StoreContext,
  smallInserts: SmallInserts,
  ref: TableRef,
  rows: ArrivingRows,
  onConflict: OnConflict,
  keyedWrite?: KeyedWrite<Inserted>,
): Promise<Inserted> {
  const keyed = noted(context, keyedWrite);
  const loaded = await insert();
  await checkpointAfterLoad(context, loaded.inserted + (loaded.updated ?? 0));
  return loaded;

  async function insert(): Promise<Inserted> {
    if (onConflict === "fail") {
      const early = await insertWhileArriving(context, ref, rows, keyed);
      if (early) return early;
      const small = await rows.inMemory();
      if (small && small.keysComplete && small.form === "objects" && small.rows > 0) {
        // Same table, same keys: one mapping, so one INSERT can take the whole group.
        const key = [ref.schema, ref.name, ...[...small.keys].sort()].join("\u0000");
        return await smallInserts.submit(key, { ref, rows, small, keyed });
      }
    }
    return await insertWhole(context, ref, await rows.whole(), onConflict, keyed);
  }
}

/**
 * Inserts a whole body of rows with `read_json`; rows with keys past the spool's sample
 * are met by a second try that knows every key.
 */
export function insertWhole(
  context: StoreContext,
  ref: TableRef,
  rows: RowsSource,
  onConflict: OnConflict,
  keyed: KeyedWrite<Inserted> | undefined,
): Promise<Inserted> {
  return withLocalFile(context.spoolDir, rows, async (path) => {
    const file: RowsFile = { ...rows, path };
    try {
      return await insertWholeOnce(context, ref, file, onConflict, keyed);
    } catch (error) {
      if (!(error instanceof MoreKeys)) throw error;
      return await insertWholeOnce(context, ref, error.complete(file), onConflict, keyed);
    }
  });
}

/**
 * How often a `skip` or `update` load runs again when another load into the table committed
 * a key it also wrote: DuckDB checks keys against other transactions at commit, so the load
 * that commits second fails though its own conflict clause would have taken those rows.
 */
const UPSERT_TRIES = 4;

function insertWholeOnce(
  context: StoreContext,
  ref: TableRef,
  file: RowsFile,
  onConflict: OnConflict,
  keyed: KeyedWrite<Inserted> | undefined,
): Promise<Inserted> {
  const { database } = context;
  return context.locks.run(
    onConflict === "fail" ? appendLocks(ref) : upsertLocks(ref),
    async () => {
      const table = await getTable(context, ref);
      checkConflictKey(table, onConflict);
      const mapping = await mapRowKeys(database, table, file);
      for (let attempt = 1;; attempt++) {
        try {
          return await database.transaction(async (session) => {
            const counts = await loadChecked(context, session, table, file, mapping, onConflict);
            return await keepAnswer(session, keyed, { table, ...counts });
          });
        } catch (error) {
          // An ApiError needs no explaining (and a database reopening could not give it).
          if (error instanceof MoreKeys || error instanceof ApiError) throw error;
          // Run again, the other load's rows now in this one's snapshot: its own clause
          // skips or updates them, as if the two had come one after the other.
          const concurrent = onConflict !== "fail" && error instanceof Error &&
            (DUPLICATE_KEY.test(error.message) || WRITE_CONFLICT.test(error.message));
          if (concurrent && attempt < UPSERT_TRIES) continue;
          if (concurrent) {
            throw ApiError.conflict(
              `Other loads into table "${table.name}" kept writing the same keys; nothing was ` +
                "changed, try again",
            );
          }
          throw await database.withSession((session) =>
            explainLoadFailure(session, table, file, mapping, error)
          );
        }
      }
    },
  );
}

/**
 * Loads rows inside the caller's transaction while a second connection reads every key
 * the rows use, when the spool pass only sampled them; rows with keys outside the sample
 * abort the load with {@link MoreKeys}, before anything commits.
 */
export async function loadChecked(
  { database }: StoreContext,
  session: Session,
  table: Table,
  file: RowsFile,
  mapping: readonly KeyColumn[],
  onConflict: OnConflict,
): Promise<LoadCounts> {
  const otherKeys = file.keysComplete ? Promise.resolve([]) : keysOutside(database, file);
  otherKeys.catch(() => {});
  const counts = await loadRows(session, table, file, mapping, onConflict);
  const found = await otherKeys;
  if (found.length > 0) throw new MoreKeys(found);
  return counts;
}
