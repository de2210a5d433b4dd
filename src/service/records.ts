/**
 * Records of an existing table: inserts streamed from a request body, pages read (filtered,
 * ordered, walked by cursor), summaries, and exports as CSV, NDJSON, JSON or Parquet.
 *
 * @module
 */

import type { Table, TableRef } from "../catalog/model.ts";
import { RowsInParts } from "../ingest/spool.ts";
import { parseReadQuery, type ReadQuery, RESERVED_PARAMETERS } from "../catalog/filters.ts";
import { ApiError } from "../errors.ts";
import type {
  KeyedWrite,
  LoadCounts,
  OnConflict,
  RecordsPage,
  RecordsSummary,
  ResultFormat,
  SummaryOptions,
} from "../store/store.ts";
import { checkJsonType, type IncomingBody, type RowsDeps, spoolOptions } from "./bodies.ts";

/** The formats a result is given in, and what a load does with a key that exists. */
export { MAX_BINS, MAX_TOP, ON_CONFLICT, RESULT_FORMATS } from "../store/store.ts";

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
    return await deps.store.records.insert(ref, rows, onConflict, keyed);
  } finally {
    await rows.discard();
  }
}

/** The parameters of a page read the grammar of `parseReadQuery` leaves to the route. */
const PAGE_PARAMETERS: ReadonlySet<string> = new Set(["schema", "offset", "limit"]);

/**
 * One page of records as JSON array text, and the count of all records; with parameters of
 * the read grammar in `params` (`select`, `order`, `count`, `after`, filters), the page they
 * ask for (see `parseReadQuery`), parsed against the table as the store's read describes it.
 *
 * @throws {ApiError} 400 for a parameter naming no column, a bad value, a cursor that is no
 * cursor of this order, or `after` with `offset`.
 */
export async function readRecords(
  deps: Pick<RowsDeps, "store">,
  ref: TableRef,
  params: URLSearchParams,
  offset: number,
  limit: number,
): Promise<RecordsPage> {
  if ([...params.keys()].every((key) => PAGE_PARAMETERS.has(key))) {
    return await deps.store.records.read(ref, offset, limit);
  }
  const afters = params.getAll("after");
  if (afters.length > 1) throw ApiError.badRequest("Query parameter after is given more than once");
  const after = afters[0];
  if (after !== undefined && (params.get("offset") ?? "") !== "") {
    throw ApiError.badRequest(
      "Query parameters after and offset cannot be given together: the cursor says where the page starts",
    );
  }
  // Parsed against the table as the read describes it: no description of its own first.
  return await deps.store.records.read(ref, offset, limit, (table) => ({
    read: parseReadQuery(params, table.columns),
    ...(after === undefined ? {} : { after }),
  }));
}

/** Reserved parameters that say nothing to a summary. */
const NOT_FOR_SUMMARY = [...RESERVED_PARAMETERS].filter((p) => p !== "schema" && p !== "select");

/** Parameters a summary reserves besides the read's: they are never filters there. */
export const SUMMARY_PARAMETERS = ["bins", "top"] as const;

/**
 * Per column (of `select`, else all), figures of the records the filters in `params` let
 * through, with the histograms and top values `options` asks for.
 *
 * @throws {ApiError} 400 for a parameter naming no column or one that does not apply to a
 * summary (`order`, `offset`, …), or a filter value its column's type cannot take.
 */
export async function summarizeRecords(
  deps: Pick<RowsDeps, "store">,
  ref: TableRef,
  params: URLSearchParams,
  options: SummaryOptions = { bins: 0, top: 0 },
): Promise<RecordsSummary> {
  for (const parameter of NOT_FOR_SUMMARY) {
    if (params.has(parameter)) {
      throw ApiError.badRequest(
        `Query parameter ${parameter} does not apply to a summary; give filters and select only`,
      );
    }
  }
  const table = await deps.store.tables.get(ref);
  const { filters, select } = parseReadQuery(params, table.columns, SUMMARY_PARAMETERS);
  return await deps.store.records.summarize(ref, filters, select, options);
}

/**
 * The read an export's `params` ask for (undefined for the whole table), checked against the
 * table's columns.
 *
 * @throws {ApiError} 400 for a parameter naming no column or one that does not apply to an
 * export; 404 for no table (when a parameter needs its columns).
 */
export async function exportQuery(
  deps: Pick<RowsDeps, "store">,
  ref: TableRef,
  params: URLSearchParams,
): Promise<ReadQuery | undefined> {
  for (const parameter of NOT_FOR_EXPORT) {
    if (params.has(parameter)) {
      throw ApiError.badRequest(
        `Query parameter ${parameter} does not apply to an export; give filters, select and order`,
      );
    }
  }
  const given = [...params.keys()].some((key) => key !== "schema" && key !== "timezone_offset");
  return given
    ? parseReadQuery(params, (await deps.store.tables.get(ref)).columns, ["timezone_offset"])
    : undefined;
}

/** Parameters of a read that say nothing to an export, which has no pages. */
const NOT_FOR_EXPORT = ["offset", "limit", "after", "count"];

/**
 * The records of the table in `format` (CSV header first) from a consistent snapshot: those
 * the filters in `params` let through, its `select`ed columns, in its `order` (record order
 * by default); with the file's name: `<table>_<YYYYMMDD_HHMMSS>.<ext>` by the time of the
 * export, shifted `offsetHours` from UTC.
 *
 * @throws {ApiError} 400 for a parameter naming no column or one that does not apply to an
 * export (`offset`, `limit`, `after`, `count`), or a filter value its column's type cannot
 * take.
 */
export async function exportRecords(
  deps: Pick<RowsDeps, "store">,
  ref: TableRef,
  format: ResultFormat,
  params: URLSearchParams,
  offsetHours: number,
): Promise<{ table: Table; stream: ReadableStream<Uint8Array>; fileName: string }> {
  const read = await exportQuery(deps, ref, params);
  const { table, stream } = await deps.store.records.export(ref, format, read);
  // Each format's name is its file extension.
  const fileName = exportFileName(table.name, Date.now(), offsetHours, format);
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
