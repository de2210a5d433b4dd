/**
 * The layout of a spooled CSV file as DuckDB's sniffer finds it, and its header.
 *
 * @module
 */

import { checkWidth } from "../../catalog/definition.ts";
import { ApiError, type ErrorDetail } from "../../errors.ts";
import type { CsvSource } from "../store.ts";
import type { Session } from "./database.ts";
import { csvProblem } from "./load_errors.ts";
import type { RowsFile } from "./sources.ts";
import { quoteLiteral } from "./sql.ts";

/** How a CSV file is laid out, as DuckDB's sniffer found it. */
export interface CsvLayout {
  readonly delimiter: string;
  readonly quote: string;
  readonly escape: string;
  /** Lines before the header. */
  readonly skip: number;
  /** The header's names, trimmed, in file order: the file's keys. */
  readonly columns: readonly string[];
  /**
   * Columns after the last named one with no header (each line ending in a delimiter, as
   * spreadsheet exports write them), whose fields are all empty: read, and left out.
   */
  readonly unnamed?: number;
  /**
   * Whether a line may be empty fields only, to be left out; false when none can be. The
   * filter costs DuckDB a vector of 2,048 values for each column, 48 MiB for 2,000 columns.
   */
  readonly separatorLines?: boolean;
}

/** Blank lines a CSV file may open with before its header. */
const MAX_BLANK_LINES = 1000;

/** Columns of a CSV file read at once for its header. */
const HEAD_SLICE = 250;

/**
 * The layout of a CSV file as DuckDB's sniffer sees it, with the first line as the header,
 * and the types it infers for the columns (from a sample, or every row). 400 when the file
 * has no header or cannot be read as CSV; 422 when two headers have one name.
 */
export async function describeCsv(
  session: Session,
  path: string,
  fromAll = false,
  skip?: number,
): Promise<{ csv: CsvLayout; types: readonly string[] }> {
  let sniffed;
  try {
    sniffed = (await session.rows(
      `SELECT Delimiter AS d, Quote AS q, Escape AS e, SkipRows AS s,
         to_json(Columns)::VARCHAR AS c FROM sniff_csv($1, header=true${
        fromAll ? ", sample_size=-1" : ""
      }${skip === undefined ? "" : `, skip=${skip}`})`,
      [path],
    ))[0];
  } catch (error) {
    throw unreadableCsv(error);
  }
  if (!sniffed) throw ApiError.badRequest("The CSV file cannot be read");
  const plain = (v: unknown) => (v === "(empty)" ? "" : String(v ?? ""));
  const layout = {
    delimiter: plain(sniffed.d),
    quote: plain(sniffed.q),
    escape: plain(sniffed.e),
    skip: Number(sniffed.s),
  };
  const types = (JSON.parse(sniffed.c as string) as { type: string }[]).map((c) => c.type);
  // Only a file whose lines the sniffer skipped, or read as one column, can be ragged: others
  // pay no read of their head.
  if (skip === undefined && (layout.skip > 0 || types.length === 1)) {
    await refuseRaggedLines(path, layout);
  }
  checkWidth("The CSV file has", types.length);
  // The header as written (the sniffer renames empty and repeated names): the first line
  // with any text, as the first non-empty row of a sheet. Read a slice of columns at a time:
  // DuckDB fills a vector of 2,048 values for each column it reads, 64 MiB for 2,000 text
  // columns, and a few of those are more than DUCKDB_MEMORY_LIMIT's default.
  const reader = `read_csv($1, header=false, all_varchar=true, delim=${
    quoteLiteral(layout.delimiter)
  }, quote=${quoteLiteral(layout.quote)}, escape=${
    quoteLiteral(layout.escape)
  }, skip=${layout.skip})`;
  const head: string[][] = [];
  for (let from = 0; from < types.length; from += HEAD_SLICE) {
    const to = Math.min(types.length, from + HEAD_SLICE);
    const positions = Array.from({ length: to - from }, (_, i) => `#${from + i + 1}`);
    const slice = await session.rows(
      `SELECT ${positions.join(", ")} FROM ${reader} LIMIT ${MAX_BLANK_LINES}`,
      [path],
    ).catch((error) => {
      throw unreadableCsv(error);
    });
    slice.forEach((row, i) => {
      (head[i] ??= []).push(...Object.values(row).map((v) => String(v ?? "").trim()));
    });
  }
  const blank = head.findIndex((row) => row.some((v) => v !== ""));
  // The sniffer again past the blank lines, for the types below the real header.
  if (blank > 0) return await describeCsv(session, path, fromAll, layout.skip + blank);
  const header = head[blank] ?? [];
  if (header.length === 0 || header.every((c) => c === "")) {
    throw ApiError.badRequest("The CSV file has no header row");
  }
  // A trailing delimiter makes columns without a header; only a value under one is refused
  // (csvRowsFile looks), as a sheet's empty columns past its header are no columns.
  let named = header.length;
  while (header[named - 1] === "") named--;
  const columns = header.slice(0, named);
  const problems: ErrorDetail[] = [];
  const seen = new Set<string>();
  columns.forEach((name, i) => {
    if (name === "") {
      problems.push({ column: `${i + 1}`, message: `Column ${i + 1} has no header` });
    } else if (seen.has(name.toLowerCase())) {
      problems.push({ column: name, message: `Header "${name}" appears more than once` });
    }
    seen.add(name.toLowerCase());
  });
  if (problems.length > 0) {
    throw ApiError.invalidData(`The CSV header is not usable: ${problems[0]!.message}`, problems);
  }
  const unnamed = header.length - named;
  return { csv: { ...layout, columns, ...(unnamed > 0 ? { unnamed } : {}) }, types };
}

/**
 * 422 naming the first record with a value in a column without a header (see
 * {@link CsvLayout.unnamed}); whitespace alone is no value.
 */
async function refuseUnnamedValues(session: Session, path: string, csv: CsvLayout) {
  const unnamed = csv.unnamed ?? 0;
  if (unnamed === 0) return;
  const all = Array.from({ length: csv.columns.length + unnamed }, (_, i) => i + 1);
  const extra = all.slice(csv.columns.length);
  const valued = (p: number) => `nullif(trim(c${p}), '') IS NOT NULL`;
  const reader = `read_csv($1, header=true, auto_detect=false, all_varchar=true, ` +
    `delim=${quoteLiteral(csv.delimiter)}, quote=${quoteLiteral(csv.quote)}, ` +
    `escape=${quoteLiteral(csv.escape)}, skip=${csv.skip}, ` +
    `columns={${all.map((p) => `'c${p}': 'VARCHAR'`).join(", ")}})`;
  const [first] = await session.rows(
    `SELECT n - 1 AS row, ${extra.map((p) => `${valued(p)} AS v${p}`).join(", ")}
       FROM (SELECT row_number() OVER () AS n, * FROM ${reader})
      WHERE ${extra.map(valued).join(" OR ")}
      LIMIT 1`,
    [path],
  ).catch((error) => {
    throw unreadableCsv(error);
  });
  if (!first) return;
  const column = extra.find((p) => first[`v${p}`] === true)!;
  throw ApiError.invalidData(
    `The CSV file has a value in column ${column}, which has no header`,
    [{ row: Number(first.row), column: `${column}`, message: "A value under no header" }],
  );
}

/** Candidate delimiters whose presence in the header line makes a sniffed other one suspect. */
const DELIMITERS = [",", ";", "\t"];

/** Bytes of a CSV file's head read to check its first lines. */
const HEAD_BYTES = 1 << 20;

/**
 * 422 when DuckDB's sniffer made the file fit by leaving lines with values out (the lines it
 * skips before the header it chose), or by taking a delimiter the header line lacks while it
 * holds a usual one: both happen when lines have different numbers of values, and the
 * contract takes the first line with a value as the header, with a value under no header an
 * error. Read as DuckDB guessed, the rows above the chosen header would be lost.
 */
async function refuseRaggedLines(path: string, layout: Omit<CsvLayout, "columns">) {
  const lines = await firstLines(path, layout.skip + 2);
  const blank = (line: string) =>
    (layout.delimiter ? line.replaceAll(layout.delimiter, "") : line)
      .replaceAll(layout.quote || '"', "").trim() === "";
  const first = lines.findIndex((line) => !blank(line));
  const header = lines[first];
  if (header === undefined) return;
  // A usual delimiter in the header and in the line below it, where the sniffer took none:
  // a header "note; remark" over lines without ";" is one column, as sniffed.
  const below = lines.slice(first + 1).find((line) => !blank(line)) ?? "";
  const ragged = first < layout.skip ||
    (!header.includes(layout.delimiter) &&
      DELIMITERS.some((d) => header.includes(d) && below.includes(d)));
  if (!ragged) return;
  throw ApiError.invalidData(
    `The CSV file's lines do not all have as many values as its header (line ${first + 1}): ` +
      "a value under no header cannot be loaded, and a line's missing values must still be " +
      "separated",
  );
}

/** The first `count` lines of the file at `path`, from its first {@link HEAD_BYTES} at most. */
async function firstLines(path: string, count: number): Promise<string[]> {
  const file = await Deno.open(path);
  try {
    const head = new Uint8Array(HEAD_BYTES);
    let length = 0;
    while (length < head.length) {
      const read = await file.read(head.subarray(length));
      if (read === null) break;
      length += read;
    }
    return new TextDecoder().decode(head.subarray(0, length)).split(/\r\n|\n|\r/, count);
  } finally {
    file.close();
  }
}

/** 400 for a file DuckDB cannot read as CSV; its other failures (out of memory) as they are. */
function unreadableCsv(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  return ApiError.badRequest(`The CSV file cannot be read: ${csvProblem(String(error))}`);
}

/**
 * The spooled CSV file at `path` as rows to load: its layout described, every row an object
 * of its header's keys, its row count unknown until loaded (it comes from the table).
 */
export async function csvRowsFile(
  session: Session,
  path: string,
  source: CsvSource,
): Promise<RowsFile> {
  const described = await describeCsv(session, path);
  await refuseUnnamedValues(session, path, described.csv);
  const csv = { ...described.csv, separatorLines: source.separatorLines ?? true };
  return {
    path,
    rows: -1,
    form: "objects",
    keys: csv.columns,
    keysComplete: true,
    firstRowOfLength: new Map(),
    hasData: true,
    csv,
  };
}
