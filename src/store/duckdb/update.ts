/**
 * Updating a table to a wanted definition in DuckDB: what really changes, whether the rows
 * allow it, and doing it, with ALTER TABLE where DuckDB can and by a rebuild where it
 * cannot, always inside the caller's one transaction.
 *
 * DuckDB's ALTER TABLE cannot move a table to another schema, reorder columns, add or drop
 * a key, retype or drop a key column, or touch a table another table references. A rebuild
 * does all of these: keep copies of the tables that reference this one, drop them, create
 * the table's new shape, copy the rows across with the column mapping, and recreate the
 * referencing tables from their copies. Column ids live in the metadata, so they survive.
 *
 * The update is planned twice: once to learn the locks it needs, and again under them to
 * check that nothing moved in between.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import { ApiError } from "../../errors.ts";
import type { Database, Session } from "./database.ts";
import type { KeyedWrite, UpdateHow } from "../store.ts";
import { changesAnything, settleAddress } from "../shared/update_analysis.ts";
import { DryRun, outcomeOf } from "../shared/dry_runs.ts";
import { existingTable } from "./catalog_rows.ts";
import { checkpoint, noted, type StoreContext } from "./context.ts";
import { keepAnswer } from "./idempotency.ts";
import { findSchema, findTable } from "./metadata.ts";
import { describeTables } from "./metadata_describe.ts";
import { engineMessage } from "./sql.ts";
import { lockKeys } from "./store_locks.ts";
import { underLookedUpLocks } from "./tables.ts";
import { alterTable, canAlter } from "./update_alter.ts";
import {
  analyseUpdate,
  dependentsInDropOrder,
  tablesTouched,
  type UpdateAnalysis,
} from "./update_analysis.ts";
import { checkRows } from "./update_checks.ts";
import { rebuildTable } from "./update_rebuild.ts";

const LOOKUPS = { findSchema, findTable };

/**
 * Updates a table to the wanted definition `decide` gives for the table as it is, in one
 * transaction, keeping its rows and column ids; 404 when it does not exist.
 */
export async function updateTable(
  context: StoreContext,
  ref: TableRef,
  decide: (current: Table) => TableUpdate,
  keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  dryRun = false,
): Promise<{ table: Table; how: UpdateHow }> {
  if (dryRun) return await outcomeOf(() => updateUnderLocks(context, ref, decide, undefined, true));
  const updated = await updateUnderLocks(context, ref, decide, noted(context, keyed));
  // Nothing changed, so nothing else needs to commit with the key.
  if (keyed && updated.how === "unchanged") {
    await context.database.transaction((session) => keepAnswer(session, keyed, updated));
  }
  // A rebuild copies every row, as a large load does.
  if (updated.how === "rebuilt") await checkpoint(context, "rebuild");
  return updated;
}

function updateUnderLocks(
  context: StoreContext,
  ref: TableRef,
  decide: (current: Table) => TableUpdate,
  keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  dryRun = false,
): Promise<{ table: Table; how: UpdateHow }> {
  const { database } = context;
  // Read once to learn the locks, and again under them to check nothing moved.
  const plan = async (session: Session) => {
    const row = await existingTable(session, ref);
    const current = (await describeTables(session, [row]))[0]!;
    const update = decide(current);
    const dependents = await dependentsInDropOrder(session, row.id);
    const touched = lockKeys(row, await tablesTouched(session, row, dependents, update));
    return { row, current, update, dependents, touched };
  };
  let seen: number;
  return underLookedUpLocks(
    context,
    ref,
    () =>
      database.transaction(async (session) => {
        const { row, touched } = await plan(session);
        seen = row.id;
        return touched;
      }),
    async (held) => {
      const prepared = await database.withSession(async (session) => {
        const { row, current, dependents, touched, ...planned } = await plan(session);
        if (row.id !== seen || touched.some((l) => !held.has(l.key))) return undefined;
        const update = await settleAddress(session, LOOKUPS, row, current, planned.update);
        const analysis = await analyseUpdate(session, row, current, update, dependents);
        if (!changesAnything(analysis)) return { table: current, how: "unchanged" as const };
        await checkRows(session, analysis);
        return analysis;
      });
      if (prepared === undefined || "how" in prepared) return prepared;
      return await applyUpdate(database, prepared, keyed, dryRun);
    },
    (updated) => updated.table,
  );
}

/** Applies an analysed update in one transaction: ALTER where it works, else a rebuild. */
export async function applyUpdate(
  database: Database,
  analysis: UpdateAnalysis,
  keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  dryRun = false,
): Promise<{ table: Table; how: UpdateHow }> {
  // The answer, kept with its key (if it has one) in the update's transaction; a dry run's
  // thrown out of it, which rolls it back.
  const answer = async (session: Session, how: "altered" | "rebuilt") => {
    const described = { id: analysis.row.id, ...analysis.plan.ref };
    const result = { table: (await describeTables(session, [described]))[0]!, how };
    if (dryRun) throw new DryRun(result);
    return await keepAnswer(session, keyed, result);
  };
  if (canAlter(analysis)) {
    try {
      return await database.transaction(async (session) => {
        await alterTable(session, analysis);
        return await answer(session, "altered");
      });
    } catch (error) {
      if (error instanceof ApiError || error instanceof DryRun) throw error;
      // DuckDB refused an ALTER (a dependency it keeps, say); the rebuild does it all.
    }
  }
  try {
    return await database.transaction(async (session) => {
      await rebuildTable(session, analysis);
      return await answer(session, "rebuilt");
    });
  } catch (error) {
    if (error instanceof ApiError || error instanceof DryRun) throw error;
    const message = engineMessage(error);
    const what = `Cannot update table "${analysis.current.name}": ${message}`;
    if (/duplicate key|PRIMARY KEY or UNIQUE/i.test(message)) throw ApiError.conflict(what);
    if (/^(Constraint|Conversion) Error/.test(String((error as Error)?.message))) {
      throw ApiError.invalidData(what);
    }
    throw error;
  }
}
