/**
 * What the DuckDB store's operations share: the database, the locks, the cached
 * descriptions, the keys with kept answers, and the checkpoints that follow large changes.
 *
 * @module
 */

import type { Logger } from "../../log.ts";
import type { KeyedWrite } from "../store.ts";
import type { Database } from "./database.ts";
import type { Descriptions } from "./descriptions.ts";
import type { KeptKeys } from "./idempotency.ts";
import type { LockSet } from "./locks.ts";
import type { PageCache } from "./page_cache.ts";

/** The state every operation of the store works with. */
export interface StoreContext {
  readonly database: Database;
  /** The directory DuckDB may read files from, for the store's own. */
  readonly spoolDir: string;
  readonly locks: LockSet;
  readonly descriptions: Descriptions;
  /** Pages of records read since their table last changed (its locks tell: see there). */
  readonly pages: PageCache;
  /** The keys with answers kept in the file. */
  readonly kept: KeptKeys;
  /** Where the store reports what fails after a change has committed. */
  readonly logger?: Logger;
  /** How long a read of records may run (see `StoreOptions`); no limit when absent. */
  readonly readTimeoutMs?: number;
}

/** Notes a write's key before the write begins (see {@link KeptKeys}). */
export function noted<R>(
  context: StoreContext,
  keyed: KeyedWrite<R> | undefined,
): KeyedWrite<R> | undefined {
  if (keyed) context.kept.note(keyed.scope, keyed.key, keyed.at);
  return keyed;
}

/**
 * Rows a load must add or change for the store to checkpoint right after it: about one of
 * DuckDB's row groups (122,880 rows), the size from which DuckDB writes a load's rows to the
 * file as it goes rather than to its write-ahead log.
 */
export const CHECKPOINT_ROWS = 100_000;

/**
 * Checkpoints after a load of at least {@link CHECKPOINT_ROWS} rows. DuckDB writes a large
 * load's rows straight to the file, so its write-ahead log, whose size triggers the
 * automatic checkpoint, hardly grows and no checkpoint follows. Until one does, DuckDB holds
 * the load's part of a key's index in memory, and sorting the table can fail for want of
 * memory: after ten uploads of a million keyed rows of 8 columns the service held 82 MB of
 * index, and a CSV export of the table failed at the default 256 MiB. The load has
 * committed when this runs, so a checkpoint that fails is logged, not answered: the next
 * one writes the same.
 */
export async function checkpointAfterLoad(context: StoreContext, rows: number): Promise<void> {
  if (rows >= CHECKPOINT_ROWS) await checkpoint(context, "load");
}

/** Checkpoints after a committed `change`; a failure is logged (see above). */
export async function checkpoint(
  context: StoreContext,
  change: "load" | "rebuild",
): Promise<void> {
  try {
    await context.database.withSession((session) => session.run("CHECKPOINT"));
  } catch (error) {
    context.logger?.log("warn", `checkpoint after a ${change} failed`, { error: String(error) });
  }
}
