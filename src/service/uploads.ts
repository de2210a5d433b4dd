/**
 * Uploads: a table created, replaced or appended to from a JSON body of rows, a CSV file or
 * a spreadsheet. Each body is spooled to disk, its format told by its bytes, its definition
 * taken from the body, a template or the rows, and loaded in one transaction.
 *
 * @module
 */

import { checkPlanLimits, checkWidth, planTable, type TablePlan } from "../catalog/definition.ts";
import type { Table, TableDefinition, TableRef } from "../catalog/model.ts";
import type { IfExists } from "../catalog/uploads.ts";
import { ApiError, type ErrorDetail } from "../errors.ts";
import {
  csvHeaderNames,
  type HeaderNames,
  readHeaderNames,
  renameCsvHeader,
} from "../ingest/header_names.ts";
import { localBytes } from "../ingest/spool.ts";
import { type MultipartUpload, spoolMultipart } from "../ingest/multipart.ts";
import { checkZip, detectFormat, readSheetApart, type SheetRows } from "../ingest/sheet.ts";
import { discard, spoolJsonRows } from "../ingest/spool.ts";
import { csvHeaderWidth } from "../ingest/csv_head.ts";
import type { RowsSummary } from "../ingest/json_rows_summary.ts";
import type { KeyedWrite, Store } from "../store/store.ts";
import { checkJsonType, type IncomingBody, type RowsDeps, spoolOptions } from "./bodies.ts";
import { oneDefinition, planFromTemplate, type TemplateUse } from "./templates.ts";

/** How many times its own size a spreadsheet may decompress to (the contract's 100×). */
const MAX_EXPANSION_RATIO = 100;

/** What an upload's table and rows come to. */
export interface Uploaded {
  table: Table;
  inserted: number;
  /** With `dryRun`: the first rows as stored, as JSON array text. */
  preview?: string;
}

/** What a dry run of an upload answers: what it would do, or the rows it would refuse. */
export interface UploadPreview {
  readonly dry_run: true;
  /** The table as it would be; null when the rows are refused and there is no table yet. */
  readonly table: Table | null;
  /** Rows that would be inserted (0 when refused). */
  readonly inserted: number;
  /** The first rows as the table would hold them (none when refused). */
  readonly records: unknown[];
  /** The refusal's details (rows, columns, messages); empty when the upload would succeed. */
  readonly errors: readonly ErrorDetail[];
  /** The refusal's message, when refused. */
  readonly message?: string;
  /**
   * The names of the file's columns as the upload read them (a header row, or the keys of
   * JSON rows), after the body's `headers` mapping; absent when refused before they were read.
   */
  readonly headers?: readonly string[];
}

/** What a request asks of an upload: what to do with an existing table, a template, a key. */
export interface UploadRequest {
  readonly ifExists: IfExists;
  /** Make the table from this template (400 when the body gives a definition too). */
  readonly template?: TemplateUse;
  readonly keyed?: KeyedWrite<Uploaded>;
  /** Checks a definition the body gives against the API's shape of one (400 when wrong). */
  readonly readDefinition: (value: unknown) => TableDefinition;
  /** Load, read the first rows, roll back: nothing is written (see {@link previewUpload}). */
  readonly dryRun?: boolean;
  /** Told the names of the file's columns once they are read (see {@link UploadPreview}). */
  readonly columnsRead?: (names: readonly string[]) => void;
}

/**
 * What `upload` (one of this module's uploads called with `dryRun`) would do: the table, the
 * rows inserted and the first 100 as stored, or, when the rows do not fit (422
 * `invalid_data`) or their keys clash (409 naming rows), the refusal's details and the table as it exists (or null). Nothing is
 * written either way; any other failure is thrown as the upload would throw it.
 */
export async function previewUpload(
  deps: Pick<RowsDeps, "store">,
  ref: TableRef,
  upload: (columnsRead: (names: readonly string[]) => void) => Promise<Uploaded>,
): Promise<UploadPreview> {
  let read: { headers?: readonly string[] } = {};
  try {
    const { table, inserted, preview } = await upload((headers) => read = { headers });
    // At most PREVIEW_ROWS rows, read from the database as JSON text.
    const records = JSON.parse(preview ?? "[]") as unknown[];
    return { dry_run: true, table, inserted, records, errors: [], ...read };
  } catch (error) {
    // Rows that do not fit (422), or whose keys clash (409 naming rows), are what a dry run
    // is for; any other failure (a table that exists under if_exists=fail) is answered as is.
    const rows = error instanceof ApiError &&
      (error.type === "invalid_data" ||
        (error.type === "conflict" && error.details?.some((d) => d.row !== undefined)));
    if (!rows) throw error;
    const table = await deps.store.tables.get(ref).catch(() => null);
    return {
      dry_run: true,
      table,
      inserted: 0,
      records: [],
      errors: error.details ?? [],
      message: error.message,
      ...read,
    };
  }
}

/**
 * Uploads a JSON body, `{"table": definition, "data": [rows]}`, to the table at `ref`;
 * 415 unless the body is JSON.
 */
export async function uploadJson(
  deps: RowsDeps,
  ref: TableRef,
  body: IncomingBody,
  options: UploadRequest,
): Promise<Uploaded> {
  const fromTemplate = await planFromTemplate(deps.store, ref, options.template);
  checkJsonType(body);
  const file = await spoolJsonRows(body.stream, body.contentLength, spoolOptions(deps, body, true));
  options.columnsRead?.(file.keys);
  try {
    const plan = oneDefinition(fromTemplate, file.table) ??
      (file.table === undefined
        ? undefined
        : planTable(ref, options.readDefinition(file.table), deps.store.maxColumns));
    checkPlanLimits(plan, deps.store);
    checkKeyCount(file, deps.store);
    return await deps.store.records.upload(ref, file, {
      plan,
      ifExists: options.ifExists,
      keyed: options.keyed,
      dryRun: options.dryRun,
    });
  } finally {
    await discard(file);
  }
}

/**
 * Uploads a multipart body's file, a spreadsheet (xlsx, xlsm, xlsb, xls, ods) or CSV text,
 * told apart by its bytes, to the table at `ref`; from `sheet` (a name or 0-based index) or
 * the first sheet of a workbook. Failures of a sheet's rows name its own row numbers.
 */
export async function uploadSpreadsheet(
  deps: RowsDeps,
  ref: TableRef,
  body: IncomingBody,
  options: UploadRequest & { readonly sheet?: string },
): Promise<Uploaded> {
  return await withUpload(deps, ref, body, options, async (upload, part, spooled) => {
    const { plan, headers } = part;
    const { file } = upload;
    const format = await detectFormat(file.path);
    const load = { plan, ifExists: options.ifExists, keyed: options.keyed, dryRun: options.dryRun };
    if (format === "csv") {
      await checkCsvWidth(file.path, deps.store);
      return await deps.store.records.uploadCsv(
        ref,
        await renamed(file, headers, spooled, options.columnsRead),
        load,
      );
    }
    const limits = {
      maxRows: deps.maxSheetRows,
      maxExpandedBytes: deps.maxSheetBytes,
      maxExpansionRatio: MAX_EXPANSION_RATIO,
    };
    const bytes = await Deno.readFile(file.path);
    if (format === "zip") checkZip(bytes, limits);
    const outPath = spooled(`${deps.spoolDir}/${crypto.randomUUID()}.json`);
    const rows = await readSheetApart(bytes, {
      ...limits,
      sheet: options.sheet,
      outPath,
      ...(headers ? { headers } : {}),
    });
    options.columnsRead?.(rows.keys);
    try {
      checkKeyCount(rows, deps.store, "The sheet has", "columns");
      return await deps.store.records.upload(ref, rows, load);
    } catch (error) {
      throw inSheetTerms(error, rows);
    }
  });
}

/** Uploads a multipart body's CSV file to the table at `ref`; 415 for any other file. */
export async function uploadCsv(
  deps: RowsDeps,
  ref: TableRef,
  body: IncomingBody,
  options: UploadRequest,
): Promise<Uploaded> {
  return await withUpload(
    deps,
    ref,
    body,
    options,
    async ({ file }, { plan, headers }, spooled) => {
      if (await detectFormat(file.path) !== "csv") {
        throw ApiError.unsupportedMediaType(
          "The file is not CSV text; send spreadsheets to upload/excel",
        );
      }
      await checkCsvWidth(file.path, deps.store);
      const csv = await renamed(file, headers, spooled, options.columnsRead);
      return await deps.store.records.uploadCsv(ref, csv, {
        plan,
        ifExists: options.ifExists,
        keyed: options.keyed,
        dryRun: options.dryRun,
      });
    },
  );
}

/**
 * The spooled CSV `file`, or with `headers` a copy of it whose header line has the mapped
 * names (in the spool, removed with the upload's files); its header's names told to
 * `columnsRead`.
 */
async function renamed(
  file: MultipartUpload["file"],
  headers: HeaderNames | undefined,
  spooled: (path: string) => string,
  columnsRead?: (names: readonly string[]) => void,
): Promise<MultipartUpload["file"]> {
  if (!headers) {
    if (columnsRead) columnsRead(await csvHeaderNames(file.path));
    return file;
  }
  const path = spooled(`${file.path}.renamed`);
  await renameCsvHeader(file.path, headers, path);
  if (columnsRead) columnsRead(await csvHeaderNames(path));
  // Lines of separators only stay where they were (those before the header go).
  return {
    ...localBytes(path),
    path,
    bytes: (await Deno.stat(path)).size,
    separatorLines: file.separatorLines,
  };
}

/**
 * 422 when a CSV file's header has more fields than a table may have columns, counted from
 * its bytes: an engine's sniffer given 10,000 columns runs out of memory before it can say so.
 */
async function checkCsvWidth(path: string, store: Store): Promise<void> {
  checkWidth(
    "The CSV file has",
    await csvHeaderWidth(path),
    "columns",
    store.maxColumns,
  );
}

/**
 * 422 when rows bring more keys than a table may have columns. For JSON rows past the sample
 * the spool pass collects keys from, the store counts the rest before it reads the rows.
 */
function checkKeyCount(
  rows: RowsSummary,
  store: Store,
  subject = "The rows have",
  noun = "keys",
): void {
  if (rows.form === "objects") checkWidth(subject, rows.keys.length, noun, store.maxColumns);
}

/**
 * Streams a multipart upload to the spool directory and runs `work` on it with the plan of
 * its table (the template's or the definition part's, if either); every file spooled for it
 * is removed afterwards.
 */
async function withUpload(
  deps: RowsDeps,
  ref: TableRef,
  body: IncomingBody,
  options: UploadRequest,
  work: (
    upload: MultipartUpload,
    part: BodyPart,
    spooled: (path: string) => string,
  ) => Promise<Uploaded>,
): Promise<Uploaded> {
  const fromTemplate = await planFromTemplate(deps.store, ref, options.template);
  const upload = await spoolMultipart(body.stream, body.contentType, {
    spoolDir: deps.spoolDir,
    maxBytes: deps.maxUploadBytes,
    idleMs: deps.bodyIdleMs,
    maxBodyPartBytes: deps.maxJsonBytes,
    onBytes: body.countBytes?.(),
    digest: body.digest,
  });
  const paths = [upload.file.path];
  try {
    const part = bodyPart(upload.body, ref, options.readDefinition, deps.store.maxColumns);
    const plan = oneDefinition(fromTemplate, part.plan) ?? part.plan;
    checkPlanLimits(plan, deps.store);
    const result = await work(
      upload,
      { plan, ...(part.headers ? { headers: part.headers } : {}) },
      (path) => (paths.push(path), path),
    );
    return { table: result.table, inserted: result.inserted, preview: result.preview };
  } finally {
    for (const path of paths) await discard({ path });
  }
}

/** What a file upload's `body` part gives: a table's plan, header names mapped to columns. */
interface BodyPart {
  readonly plan?: TablePlan;
  readonly headers?: HeaderNames;
}

/**
 * The plan and the header mapping in a file upload's `body` part
 * (`{"table": definition, "headers": {"File header": "column"}}`), each if it has one.
 */
function bodyPart(
  text: string | undefined,
  ref: TableRef,
  readDefinition: (value: unknown) => TableDefinition,
  maxColumns: number,
): BodyPart {
  if (text === undefined || text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw ApiError.badRequest('The body part is not JSON; send {"table": definition}');
  }
  if (value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw ApiError.badRequest('The body part must be a JSON object: {"table": definition}');
  }
  const { table, headers } = value as { table?: unknown; headers?: unknown };
  const names = readHeaderNames(headers);
  return {
    ...(table === undefined || table === null
      ? {}
      : { plan: planTable(ref, readDefinition(table), maxColumns) }),
    ...(names ? { headers: names } : {}),
  };
}

/** A failed sheet load's details with the sheet's own row numbers beside the record index. */
function inSheetTerms(error: unknown, rows: SheetRows): unknown {
  if (!(error instanceof ApiError) || !error.details?.some((d) => d.row !== undefined)) {
    return error;
  }
  const details = error.details.map((d) =>
    d.row === undefined || rows.sheetRows[d.row] === undefined
      ? d
      : { ...d, sheet: rows.sheet, sheet_row: rows.sheetRows[d.row] }
  );
  return new ApiError(error.status, error.type, error.message, {
    details,
    headers: { ...error.headers },
  });
}
