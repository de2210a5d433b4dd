/**
 * Inserting a large body of rows part by part while it still arrives, so the load overlaps
 * the upload.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { beforeDeadline } from "../../deadline.ts";
import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import type { ArrivingRows, KeyedWrite, RowsPart } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { keepAnswer } from "./idempotency.ts";
import { loadPlainly } from "./plain_loads.ts";
import { appendParts } from "./rows.ts";
import type { Inserted } from "./small_inserts.ts";
import { localFile } from "./sources.ts";

/** Longest a load of a body still arriving waits for its next part (see nextPart). */
const PART_WAIT_MS = 2_000;

/**
 * The next part of a body loaded while it arrives. The load holds its table's lock and a
 * transaction meanwhile, so a part that keeps it waiting past {@link PART_WAIT_MS} fails it:
 * the body is then loaded whole once it has all arrived, holding nothing until then, and a
 * client trickling its body cannot hold up DDL on the table.
 */
async function nextPart(parts: AsyncIterator<RowsPart>): Promise<RowsPart> {
  const next = parts.next();
  next.catch(() => {}); // Abandoned when late; the whole-body path meets the same failure.
  const late = () => new Error("The body's next part is late");
  return (await beforeDeadline(next, PART_WAIT_MS, late)).value;
}

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
  // No lock while the first part arrives: a slow client must not hold up DDL on the table,
  // or anything else in its schema, for a body that turns out to fit in one part.
  const parts = rows.parts()[Symbol.asyncIterator]();
  const first = await parts.next().catch(() => undefined);
  if (!first || first.done || first.value.last) return undefined;
  const sample = first.value.progress;
  if (sample.form !== "objects") return undefined;
  return await loadPlainly(context, ref, sample, (table, mapping) => {
    let summary: RowsSummary | undefined;
    async function* paths() {
      for (let part = first!.value;; part = await nextPart(parts)) {
        // Each part's file is let go once read: the next part is asked for after that.
        const file = await localFile(context.spoolDir, part);
        try {
          yield file.path;
        } finally {
          await file.release();
        }
        if (part.last) return void (summary = part.progress);
      }
    }
    return context.database.transaction(async (session) => {
      const inserted = await appendParts(session, table, paths(), mapping);
      // Keys only grow; the same count means the mapping saw them all.
      if (!summary?.keysComplete || summary.keys.length !== sample.keys.length) {
        throw new Error("Rows use keys the first part did not show");
      }
      if (keyed) await keepAnswer(session, keyed, { table, inserted });
      return { table, inserted };
    });
  });
}
