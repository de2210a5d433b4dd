/**
 * Inserting a large body of rows part by part while it still arrives, so the load overlaps
 * the upload.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { ArrivingParts } from "../shared/arriving_parts.ts";
import type { ArrivingRows, KeyedWrite, RowsPart } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { keepAnswer } from "./idempotency.ts";
import { loadPlainly } from "./plain_loads.ts";
import { appendParts } from "./rows.ts";
import type { Inserted } from "./small_inserts.ts";
import { localFile } from "./sources.ts";

/**
 * Loads each part of a large body while the next one arrives, in one transaction, so the
 * load overlaps the upload. Only the plain case: a body that fits in one part, any
 * failure, or rows whose keys the spool could not vouch for answer undefined, having
 * changed nothing, and the whole body then takes the ordinary path, which also explains
 * failures with whole-body row numbers.
 */
export async function insertWhileArriving(
  context: StoreContext,
  ref: TableRef,
  rows: ArrivingRows,
  keyed: KeyedWrite<Inserted> | undefined,
): Promise<Inserted | undefined> {
  const arriving = await ArrivingParts.of(rows);
  if (!arriving) return undefined;
  return await loadPlainly(context, ref, arriving.sample, (table, mapping) => {
    async function* paths(parts: AsyncIterable<RowsPart>) {
      for await (const part of parts) {
        // Each part's file is let go once read: the next part is asked for after that.
        const file = await localFile(context.spoolDir, part);
        try {
          yield file.path;
        } finally {
          await file.release();
        }
      }
    }
    return context.database.transaction(async (session) => {
      const inserted = await appendParts(session, table, paths(arriving.parts()), mapping);
      arriving.summary();
      return await keepAnswer(session, keyed, { table, inserted });
    });
  });
}
