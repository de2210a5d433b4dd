/**
 * Uploaded files: what format they are (from their bytes, never their name), guards against
 * hostile spreadsheets, and one sheet turned into the rows file the JSON loader reads.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { inflateRawSync } from "node:zlib";
import type * as SheetJS from "xlsx";
import { checkHeadersUsed, type HeaderNames, headerRenamer } from "./header_names.ts";
import { ApiError, type ErrorDetail, type ErrorStatus } from "../errors.ts";
import type { RowsSummary } from "./json_rows_summary.ts";
import { cellValue, columnClocks, type SheetDates } from "./sheet_values.ts";
import { type LocalBytes, localBytes, writeAll } from "./spool.ts";

/**
 * SheetJS, loaded by the first sheet read (in the worker of {@link readSheetApart}): the
 * service's process never reads a sheet itself, and its start skips SheetJS's load (30 ms).
 */
let XLSX: typeof SheetJS;

/** What an uploaded file is. */
export type FileFormat = "zip" | "xls" | "csv";

/** Limits on what a spreadsheet may expand to. */
export interface SheetLimits {
  /** Most rows of a sheet, the header included. */
  readonly maxRows: number;
  /** Most bytes the file may decompress to, before the ratio. */
  readonly maxExpandedBytes: number;
  /** Most times its own size the file may decompress to. */
  readonly maxExpansionRatio: number;
  /** Most bytes one part may decompress to; {@link MAX_PART_BYTES} when absent. */
  readonly maxPartBytes?: number;
}

/**
 * Most bytes one part of a workbook may unpack to: SheetJS reads each XML part as one string,
 * one character a byte, and V8's strings hold at most 2^29 - 24 characters. A longer sheet is
 * silently dropped by SheetJS, so it is refused here, naming the reason.
 */
export const MAX_PART_BYTES = 2 ** 29 - 24;

/** A sheet's rows as newline-delimited JSON objects, keyed by the trimmed header names. */
export interface SheetRows extends RowsSummary {
  readonly path: string;
  /** For each row of the file, its 1-based row number in the sheet, for messages. */
  readonly sheetRows: readonly number[];
  /** The sheet read. */
  readonly sheet: string;
}

const ZIP_LOCAL = [0x50, 0x4b, 0x03, 0x04];
const OLE2 = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

/** Bytes looked at to tell text from binary. */
const SNIFF_BYTES = 64 * 1024;

/** Most entries a spreadsheet's zip may have. */
const MAX_ZIP_ENTRIES = 10_000;

/**
 * The format of a file from its first bytes: a zip (xlsx, xlsm, xlsb, ods), an OLE2
 * compound file (xls), or UTF-8 text (CSV). 415 for anything else, including XML or HTML
 * text, which SheetJS would read but the contract does not offer.
 */
export async function detectFormat(path: string): Promise<FileFormat> {
  const head = new Uint8Array(SNIFF_BYTES);
  let length = 0;
  const file = await Deno.open(path);
  try {
    while (length < head.length) {
      const n = await file.read(head.subarray(length));
      if (n === null) break;
      length += n;
    }
  } finally {
    file.close();
  }
  const bytes = head.subarray(0, length);
  if (startsWith(bytes, ZIP_LOCAL)) return "zip";
  if (startsWith(bytes, OLE2)) return "xls";
  if (length === 0) throw ApiError.badRequest("The file is empty");
  if (looksLikeText(bytes, length === SNIFF_BYTES)) {
    const text = new TextDecoder().decode(bytes.subarray(0, 256)).replace(/^\uFEFF/, "")
      .trimStart();
    if (!text.startsWith("<")) return "csv";
  }
  throw ApiError.unsupportedMediaType(
    "The file is not a spreadsheet this service reads: xlsx, xlsm, xlsb, xls, ods or csv",
  );
}

/**
 * Checks a zip before SheetJS opens it: every entry is inflated once, natively, and
 * counted, so a zip bomb is refused however its headers lie, and no XML part may declare a
 * DTD (entity expansion, "billion laughs"). 413 past the limits, 400 for a broken zip.
 */
export function checkZip(bytes: Uint8Array, limits: SheetLimits): void {
  const budget = Math.min(limits.maxExpandedBytes, bytes.length * limits.maxExpansionRatio);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The end of central directory record: within the last 64 KiB + 22 bytes.
  let eocd = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 0xffff); i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw brokenZip("no end of central directory; the file may be truncated");
  const entries = view.getUint16(eocd + 10, true);
  const directoryAt = view.getUint32(eocd + 16, true);
  if (entries > MAX_ZIP_ENTRIES) throw brokenZip(`more than ${MAX_ZIP_ENTRIES} entries`);
  const partLimit = limits.maxPartBytes ?? MAX_PART_BYTES;
  let expanded = 0;
  let at = directoryAt;
  for (let n = 0; n < entries; n++) {
    if (at + 46 > bytes.length || view.getUint32(at, true) !== 0x02014b50) {
      throw brokenZip("a damaged central directory");
    }
    const method = view.getUint16(at + 10, true);
    const compressed = view.getUint32(at + 20, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extraLength + commentLength;
    if (local + 30 > bytes.length || view.getUint32(local, true) !== 0x04034b50) {
      throw brokenZip(`entry "${name}" is missing`);
    }
    const localNameLength = view.getUint16(local + 26, true);
    const localName = new TextDecoder().decode(
      bytes.subarray(local + 30, local + 30 + localNameLength),
    );
    // SheetJS goes by the local header: a name that differs could hide an entry from us.
    if (localName !== name) throw brokenZip(`entry "${name}" has two names`);
    const dataAt = local + 30 + localNameLength + view.getUint16(local + 28, true);
    if (dataAt + compressed > bytes.length) throw brokenZip(`entry "${name}" is cut short`);
    let data: Uint8Array;
    if (method === 0) data = bytes.subarray(dataAt, dataAt + compressed);
    else if (method === 8) {
      // Inflated as SheetJS will inflate it, to the stream's own end whatever the sizes
      // claim, and refused when the stream does not end exactly where the sizes say.
      let inflated: { buffer: Uint8Array; engine: { bytesWritten: number } };
      const room = Math.max(1, budget - expanded);
      try {
        inflated = inflateRawSync(bytes.subarray(dataAt), {
          info: true,
          maxOutputLength: Math.min(room, partLimit + 1),
        }) as unknown as typeof inflated;
      } catch (error) {
        if (error instanceof RangeError) {
          throw room <= partLimit ? tooExpanded(budget) : partTooLarge(name, partLimit);
        }
        throw brokenZip(`entry "${name}" does not inflate`);
      }
      if (inflated.engine.bytesWritten !== compressed) {
        throw brokenZip(`entry "${name}" is not the size its headers say`);
      }
      data = inflated.buffer;
    } else throw brokenZip(`entry "${name}" uses compression method ${method}`);
    expanded += data.length;
    if (expanded > budget) throw tooExpanded(budget);
    if (data.length > partLimit) throw partTooLarge(name, partLimit);
    if (/\.(xml|rels|vml)$/i.test(name)) checkProlog(data, name);
  }
}

/**
 * 400 when an XML part declares a DTD or entities: they may stand only before the root
 * element's start tag, so the scan ends there.
 */
function checkProlog(data: Uint8Array, name: string): void {
  const text = new TextDecoder().decode(data.subarray(0, PROLOG_BYTES));
  const root = text.search(/<[A-Za-z_]/);
  if (root < 0 && data.length > PROLOG_BYTES) throw brokenZip(`part "${name}" has no root element`);
  if (/<!(DOCTYPE|ENTITY)/i.test(root < 0 ? text : text.slice(0, root))) throw dtd(name);
}

/** Most bytes of an XML part looked at for its root element. */
const PROLOG_BYTES = 1024 * 1024;

/** Options of {@link readSheet}. */
export interface ReadSheetOptions extends SheetLimits {
  /** Sheet name or 0-based index as given in the query; absent for the first sheet. */
  readonly sheet?: string;
  /** Where to write the rows file. */
  readonly outPath: string;
  /** Header names mapped to column names (from the upload's `body` part). */
  readonly headers?: HeaderNames;
}

/**
 * Reads one sheet of a spreadsheet (already checked by {@link checkZip} when a zip) with
 * SheetJS and writes its records as newline-delimited JSON objects for the JSON loader.
 *
 * Layout: the first non-empty row is the header, each later non-empty row a record. Header
 * names are trimmed; a column with values but no header, or two headers with one name, is
 * 422. Values: text cells stay text (so `01234` keeps its zero), numbers stay numbers,
 * booleans booleans, cells with a date format become `YYYY-MM-DD` (or with the time of day
 * when it has one), formula cells give their cached value, error cells (`#DIV/0!`) and
 * empty cells null.
 */
export async function readSheet(bytes: Uint8Array, options: ReadSheetOptions): Promise<SheetRows> {
  XLSX ??= await import("xlsx");
  // A Node Buffer spares SheetJS converting the bytes to a binary string first.
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const read = (sheets: string | number) => {
    try {
      return XLSX.read(data, {
        type: "buffer",
        dense: true,
        cellDates: false,
        cellNF: true, // The number format tells dates from numbers.
        cellFormula: false,
        cellHTML: false,
        cellText: false,
        cellStyles: false,
        sheets,
        sheetRows: options.maxRows + 1,
      });
    } catch (error) {
      throw unreadable(error);
    }
  };
  // One parse for the usual case: the sheet named as given, or the first one.
  let book = read(options.sheet ?? 0);
  const sheet = pickSheet(book.SheetNames, options.sheet);
  if (!book.Sheets[sheet]) book = read(sheet);
  const worksheet = book.Sheets[sheet];
  if (!worksheet) throw ApiError.badRequest(`Sheet "${sheet}" could not be read`);
  const range = worksheet["!ref"] ? XLSX.utils.decode_range(worksheet["!ref"]) : undefined;
  const fullRange = worksheet["!fullref"] ? XLSX.utils.decode_range(worksheet["!fullref"]) : range;
  if (fullRange && fullRange.e.r + 1 > options.maxRows) {
    throw new ApiError(
      413,
      "payload_too_large",
      `Sheet "${sheet}" has more than ${options.maxRows} rows`,
    );
  }
  const date1904 = Boolean(book.Workbook?.WBProps?.date1904);
  // SheetJS turns an ODS date into a serial as Excel would count it, a day short before
  // March 1900 (negative serials included); xlsx and xls files hold the serial itself.
  // SheetJS names the format it read, whoever wrote the file and however it is zipped.
  const dates: SheetDates = {
    system: date1904 ? "1904" : book.bookType === "ods" ? "ods" : "1900",
    isDate: (format) => XLSX.SSF.is_date(format),
  };
  const cells = (worksheet["!data"] ?? []) as (SheetJS.CellObject | undefined)[][];
  const clocks = columnClocks(cells, dates);
  const out = await Deno.open(options.outPath, { write: true, createNew: true, mode: 0o600 });
  const encoder = new TextEncoder();
  let buffer = "";
  let header: { key: string; index: number }[] | undefined;
  /** The header name of each column, by column index. */
  const keyAt: (string | undefined)[] = [];
  const sheetRows: number[] = [];
  try {
    for (let r = 0; r < cells.length; r++) {
      const row = cells[r];
      if (!row) continue;
      if (!header) {
        if (row.some((cell) => cellValue(cell, dates) !== null)) {
          header = headerOf(row, r, dates, options.headers);
          for (const { key, index } of header) keyAt[index] = key;
        }
        continue;
      }
      // Empty cells are left out: the loader reads a missing key as null.
      const record: Record<string, unknown> = {};
      let any = false;
      for (let c = 0; c < row.length; c++) {
        const value = cellValue(row[c], dates, clocks[c]);
        if (value === null) continue;
        const key = keyAt[c];
        if (key === undefined) {
          throw ApiError.invalidData(
            `Cell ${XLSX.utils.encode_cell({ r, c })} has a value but its column has no header`,
            [{ row: sheetRows.length, column: XLSX.utils.encode_col(c), message: "No header" }],
          );
        }
        record[key] = value;
        any = true;
      }
      if (!any) continue;
      sheetRows.push(r + 1);
      buffer += JSON.stringify(record) + "\n";
      if (buffer.length > 1 << 20) {
        await writeAll(out, encoder.encode(buffer));
        buffer = "";
      }
    }
    await writeAll(out, encoder.encode(buffer));
  } finally {
    out.close();
  }
  const keys = header?.map((h) => h.key) ?? [];
  return {
    path: options.outPath,
    rows: sheetRows.length,
    form: sheetRows.length > 0 ? "objects" : null,
    keys,
    keysComplete: true,
    firstRowOfLength: new Map(),
    hasData: true,
    sheetRows,
    sheet,
  };
}

/**
 * {@link readSheet} in a worker of its own, so a long parse does not stall the service;
 * the worker's heap, SheetJS's whole workbook, goes with it when it ends.
 */
export function readSheetApart(
  bytes: Uint8Array,
  options: ReadSheetOptions,
): Promise<SheetRows & LocalBytes> {
  const worker = new Worker(new URL("./sheet_worker.ts", import.meta.url).href, {
    type: "module",
  });
  return new Promise<SheetRows & LocalBytes>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<{ rows?: SheetRows; error?: WorkerError }>) => {
      const { rows, error } = event.data;
      // A worker's message carries data only: the source's functions are added here.
      if (rows) resolve({ ...rows, ...localBytes(rows.path) });
      else if (error?.status) {
        reject(new ApiError(error.status, error.type!, error.message, { details: error.details }));
      } else reject(new Error(`Reading the sheet failed: ${error?.message}`));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      reject(new Error(`Reading the sheet failed: ${event.message}`));
    };
    worker.postMessage({ bytes, options }, [bytes.buffer as ArrayBuffer]);
  }).finally(() => worker.terminate());
}

/** An error as a worker sends it back. */
interface WorkerError {
  readonly status?: ErrorStatus;
  readonly type?: string;
  readonly message: string;
  readonly details?: readonly ErrorDetail[];
}

function pickSheet(names: readonly string[], wanted: string | undefined): string {
  if (names.length === 0) throw ApiError.badRequest("The spreadsheet has no sheets");
  if (wanted === undefined || wanted === "") return names[0]!;
  if (names.includes(wanted)) return wanted;
  const folded = names.find((n) => n.toLowerCase() === wanted.toLowerCase());
  if (folded) return folded;
  if (/^\d+$/.test(wanted) && Number(wanted) < names.length) return names[Number(wanted)]!;
  throw ApiError.notFound(
    `The spreadsheet has no sheet "${wanted}"; it has ${
      names.map((n, i) => `${i}: "${n}"`).join(", ")
    }`,
  );
}

/** The header row's names and where they are; 422 for duplicates. */
function headerOf(
  row: (SheetJS.CellObject | undefined)[],
  r: number,
  dates: SheetDates,
  names?: HeaderNames,
): { key: string; index: number }[] {
  const header: { key: string; index: number }[] = [];
  const seen = new Map<string, number>();
  const rename = names ? headerRenamer(names) : undefined;
  const written: string[] = [];
  for (let c = 0; c < row.length; c++) {
    const value = cellValue(row[c], dates);
    const given = value === null ? "" : String(value).trim();
    if (given === "") continue;
    written.push(given);
    const name = rename ? rename.name(given) : given;
    const earlier = seen.get(name.toLowerCase());
    if (earlier !== undefined) {
      throw ApiError.invalidData(
        `Header "${name}" appears twice (columns ${XLSX.utils.encode_col(earlier)} and ${
          XLSX.utils.encode_col(c)
        }) in row ${r + 1}`,
      );
    }
    seen.set(name.toLowerCase(), c);
    header.push({ key: name, index: c });
  }
  if (rename) checkHeadersUsed(rename.unused(), written);
  return header;
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

/** UTF-8 without NUL bytes; a sequence cut by the sniff window's end is allowed. */
function looksLikeText(bytes: Uint8Array, truncated: boolean): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: truncated });
    return true;
  } catch {
    return false;
  }
}

function brokenZip(why: string): ApiError {
  return ApiError.badRequest(`The file is not a readable spreadsheet: ${why}`);
}

function partTooLarge(name: string, limit: number): ApiError {
  return new ApiError(
    413,
    "payload_too_large",
    `The spreadsheet part "${name}" unpacks to more than ${limit} bytes, the most the ` +
      "spreadsheet reader takes a part; send the sheet as CSV",
  );
}

function tooExpanded(budget: number): ApiError {
  return new ApiError(
    413,
    "payload_too_large",
    `The spreadsheet decompresses to more than ${budget} bytes`,
  );
}

function dtd(name: string): ApiError {
  return ApiError.badRequest(
    `The spreadsheet part "${name}" declares a DTD or XML entities, which spreadsheets never need`,
  );
}

function unreadable(error: unknown): ApiError {
  const message = error instanceof Error ? error.message : String(error);
  return ApiError.badRequest(`The file is not a readable spreadsheet: ${message.slice(0, 200)}`);
}
