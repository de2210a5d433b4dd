/**
 * A table's records streamed as a file (CSV, NDJSON, JSON, Parquet): the SELECT of
 * shared/record_reads.ts run by the streamer of result_formats.ts, in one snapshot.
 *
 * @module
 */

import type { ReadQuery } from "../../catalog/filters.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import type { ResultFormat } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Param } from "./database.ts";
import { onDescribedTable } from "./record_reads.ts";
import { checkValues, filterValueChecks, POSTGRES } from "./record_filters.ts";
import { BoundValues } from "../shared/record_filters.ts";
import { recordsSelect } from "../shared/record_reads.ts";
import { streamSelect } from "./result_formats.ts";
import { checkExportable } from "../shared/exports.ts";

const ALL: ReadQuery = { filters: [], order: [], count: "none" };

/**
 * The records `read` chooses (all by default) in `format`, in its order (record order by
 * default), from the snapshot in which the table was described: the stream's transaction
 * holds the table's shared lock, so its definition cannot change under the export. The
 * store's deadline bounds each statement, each batch of rows included, not the whole export:
 * one of a large table goes on as long as it makes progress.
 *
 * @throws {ApiError} 400 for a filter value its column's type cannot take; 404 for no such
 * table; 408 when the first rows take longer than the deadline (the stream breaks off when a
 * later batch does).
 */
export async function exportRecords(
  context: StoreContext,
  ref: TableRef,
  format: ResultFormat,
  read: ReadQuery = ALL,
): Promise<{ table: Table; stream: ReadableStream<Uint8Array> }> {
  let described: Table | undefined;
  const { stream } = await streamSelect(
    context,
    (session) =>
      onDescribedTable(session, context.descriptions, ref, async (table) => {
        described = table;
        checkExportable(table, format);
        await checkValues(session, filterValueChecks(table, read.filters));
        const bound = new BoundValues<Param>();
        return { sql: recordsSelect(POSTGRES, table, read, bound).sql, params: bound.values };
      }),
    format,
    { timeoutMs: context.readTimeoutMs, perBatch: true },
  );
  return { table: described!, stream };
}
