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
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import type { Database, Session } from "./database.ts";
import type { KeyedWrite, UpdateHow } from "../store.ts";
import { keepAnswer } from "./idempotency.ts";
import { describeTables } from "./metadata_describe.ts";
import { engineMessage } from "./sql.ts";
import { alterTable, canAlter } from "./update_alter.ts";
import type { UpdateAnalysis } from "./update_analysis.ts";
import { rebuildTable } from "./update_rebuild.ts";

/** Applies an analysed update in one transaction: ALTER where it works, else a rebuild. */
export async function applyUpdate(
  database: Database,
  analysis: UpdateAnalysis,
  keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
): Promise<{ table: Table; how: UpdateHow }> {
  // The answer, kept with its key (if it has one) in the update's transaction.
  const answer = async (session: Session, how: "altered" | "rebuilt") => {
    const described = { id: analysis.row.id, ...analysis.plan.ref };
    const result = { table: (await describeTables(session, [described]))[0]!, how };
    if (keyed) await keepAnswer(session, keyed, result);
    return result;
  };
  if (canAlter(analysis)) {
    try {
      return await database.transaction(async (session) => {
        await alterTable(session, analysis);
        return await answer(session, "altered");
      });
    } catch (error) {
      if (error instanceof ApiError) throw error;
      // DuckDB refused an ALTER (a dependency it keeps, say); the rebuild does it all.
    }
  }
  try {
    return await database.transaction(async (session) => {
      await rebuildTable(session, analysis);
      return await answer(session, "rebuilt");
    });
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const message = engineMessage(error);
    const what = `Cannot update table "${analysis.current.name}": ${message}`;
    if (/duplicate key|PRIMARY KEY or UNIQUE/i.test(message)) throw ApiError.conflict(what);
    if (/^(Constraint|Conversion) Error/.test(String((error as Error)?.message))) {
      throw ApiError.invalidData(what);
    }
    throw error;
  }
}
