/**
 * `PUT /table/{name}` on PostgreSQL: the table updated to a wanted definition in one
 * transaction (PostgreSQL's DDL is transactional), keeping the rows and the metadata's column
 * ids: with ALTER TABLE, then a rebuild when the columns change order (update_rebuild.ts).
 *
 * The transaction takes the table's exclusive advisory lock and its schema's shared one
 * first, so every instance on the database serialises its changes to the table, and the
 * definition `decide` judges is the one the update starts from. The locks of the new
 * address and of the tables new foreign keys reference are taken next; a deadlock among
 * them PostgreSQL detects and answers (409).
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import { DryRun, outcomeOf } from "../shared/dry_runs.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite, UpdateHow } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { schemaLock, tableLock, takeLocks } from "./locks.ts";
import { findSchema, findTable } from "./metadata.ts";
import { describeTables } from "./metadata_describe.ts";
import { existingTable } from "./tables.ts";
import { alterTable } from "./update_alter.ts";
import { analyseUpdate } from "./update_analysis.ts";
import { changesAnything, settleAddress } from "../shared/update_analysis.ts";
import { rebuildInOrder } from "./update_rebuild.ts";

/**
 * Updates a table to the wanted definition `decide` gives for the table as it is, in one
 * transaction, keeping its rows and column ids; 404 when it does not exist. The answer is
 * "unchanged", "altered", or "rebuilt" when the columns changed order. A keyed write's
 * answer is kept in the same transaction.
 */
export function updateTable(
  { database }: StoreContext,
  ref: TableRef,
  decide: (current: Table) => TableUpdate,
  keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  dryRun = false,
): Promise<{ table: Table; how: UpdateHow }> {
  return outcomeOf(() =>
    keyedTransaction(database, keyed, async (session) => {
      await takeLocks(session, [schemaLock(ref.schema, "shared"), tableLock(ref, "exclusive")]);
      const row = await existingTable(session, ref);
      const current = (await describeTables(session, [row]))[0]!;
      const decided = decide(current);
      const target = decided.plan.ref;
      await takeLocks(session, [
        schemaLock(target.schema, "shared"),
        tableLock(target, "exclusive"),
        ...decided.plan.foreignKeys.map((fk) => tableLock(fk.reference, "shared")),
      ]);
      const update = await settleAddress(session, { findSchema, findTable }, row, current, decided);
      const analysis = await analyseUpdate(session, row, current, update);
      let result: { table: Table; how: UpdateHow };
      if (!changesAnything(analysis)) result = { table: current, how: "unchanged" };
      else {
        try {
          await alterTable(session, analysis);
          if (analysis.orderChanged) await rebuildInOrder(session, analysis);
        } catch (error) {
          const code = (error as { code?: string }).code;
          const message = `Cannot update table "${current.name}": ${(error as Error).message}`;
          // A name PostgreSQL's other relations (a sequence, an index) already hold.
          if (code === "42P07") throw ApiError.conflict(message);
          // A key over a type without equality (json): 42883 from the check for duplicates,
          // 42704 from the index, as POST /table answers it.
          if (code === "42883" || code === "42704") throw ApiError.unprocessable(message);
          throw error;
        }
        const table = (await describeTables(session, [{ id: row.id, ...update.plan.ref }]))[0]!;
        result = { table, how: analysis.orderChanged ? "rebuilt" : "altered" };
      }
      // Thrown out of the transaction, a dry run's answer rolls it back.
      if (dryRun) throw new DryRun(result);
      return await keepAnswer(session, keyed, result);
    })
  );
}
