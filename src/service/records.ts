/**
 * Records of an existing table: inserts streamed from a request body, pages read, and the
 * whole table exported as CSV, NDJSON, JSON or Parquet.
 *
 * @module
 */

import type { Table, TableRef } from "../catalog/model.ts";
import { RowsInParts } from "../ingest/spool.ts";
import type { KeyedWrite, LoadCounts, OnConflict, ResultFormat } from "../store/store.ts";
import { checkJsonType, type IncomingBody, type RowsDeps, spoolOptions } from "./bodies.ts";

/**
 * Size of the parts a records body is spooled in: each part is loaded while the next
 * arrives. Large enough that DuckDB's parallel reader has work for every thread.
 */
const PART_BYTES = 32 * 1024 * 1024;

/**
 * Inserts the JSON array of records `body` into the table at `ref` in one transaction,
 * failing, skipping or updating on key conflicts; 415 unless the body is JSON.
 */
export async function insertRecords(
  deps: RowsDeps,
  ref: TableRef,
  body: IncomingBody,
  onConflict: OnConflict,
  keyed?: KeyedWrite<{ table: Table } & LoadCounts>,
): Promise<{ table: Table } & LoadCounts> {
  checkJsonType(body);
  const rows = new RowsInParts(body.stream, body.contentLength, {
    ...spoolOptions(deps, body, false),
    // Only fail-mode loads use parts early; the others would only join them again.
    partBytes: onConflict === "fail" ? PART_BYTES : Infinity,
  });
  try {
    return await deps.store.insertRecords(ref, rows, onConflict, keyed);
  } finally {
    await rows.discard();
  }
}

/** One page of records as JSON array text, and the count of all records. */
export async function readRecords(
  deps: Pick<RowsDeps, "store">,
  ref: TableRef,
  offset: number,
  limit: number,
): Promise<{ json: string; total: number }> {
  return await deps.store.readRecords(ref, offset, limit);
}

/** The extension of an exported file in each format. */
export const EXTENSIONS: Readonly<Record<ResultFormat, string>> = {
  csv: "csv",
  ndjson: "ndjson",
  json: "json",
  parquet: "parquet",
};

/**
 * Every record of the table in `format` (CSV header first), from a consistent snapshot,
 * with the file's name: `<table>_<YYYYMMDD_HHMMSS>.<ext>` by the time of the export,
 * shifted `offsetHours` from UTC.
 */
export async function exportRecords(
  deps: Pick<RowsDeps, "store">,
  ref: TableRef,
  format: ResultFormat,
  offsetHours: number,
): Promise<{ table: Table; stream: ReadableStream<Uint8Array>; fileName: string }> {
  const { table, stream } = await deps.store.exportRecords(ref, format);
  const fileName = exportFileName(table.name, Date.now(), offsetHours, EXTENSIONS[format]);
  return { table, stream, fileName };
}

/**
 * `<table>_<YYYYMMDD_HHMMSS>.<extension>`: the moment `now`, shifted `offsetHours` from UTC.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exportFileName } from "./records.ts";
 *
 * const now = Date.UTC(2026, 0, 2, 3, 4, 5);
 * assert.equal(exportFileName("users", now, 0), "users_20260102_030405.csv");
 * assert.equal(exportFileName("users", now, 5.5), "users_20260102_083405.csv");
 * assert.equal(exportFileName("users", now, 0, "parquet"), "users_20260102_030405.parquet");
 * ```
 */
export function exportFileName(
  table: string,
  now: number,
  offsetHours: number,
  extension = "csv",
): string {
  const shifted = new Date(now + Math.round(offsetHours * 3600) * 1000);
  // 2026-01-02T03:04:05.678Z → 20260102_030405
  const stamp = shifted.toISOString().slice(0, 19).replaceAll(/[-:]/g, "").replace("T", "_");
  return `${table}_${stamp}.${extension}`;
}
