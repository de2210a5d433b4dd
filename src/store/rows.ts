/**
 * Rows in and out of DuckDB tables: bulk loads from spooled JSON with `read_json`, the
 * diagnosis of a load that failed, and reads as JSON or CSV.
 *
 * @module
 */

import { checkWidth } from "../catalog/definition.ts";
import type { Column, Table } from "../catalog/model.ts";
import type { KeyColumn } from "../catalog/rows.ts";
import { ApiError, type ErrorDetail, MAX_DETAILS } from "../errors.ts";
import type { Session } from "./database.ts";
import { PLACEHOLDER_COLUMN } from "./metadata.ts";
import { engineMessage, qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import { csvLine, jsonMembers, jsonObject, readAs } from "./values.ts";
import type { OnConflict } from "./store.ts";

/** Counts of a load. */
export interface LoadCounts {
  readonly inserted: number;
  readonly skipped?: number;
  readonly updated?: number;
}

/** A spooled rows file as the loader needs it. */
export interface RowsFile {
  readonly path: string;
  readonly rows: number;
  /** Set when the file is CSV rather than newline-delimited JSON objects. */
  readonly csv?: CsvLayout;
}

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
   * Whether a line may be empty fields only, to be left out; false when none can be. The
   * filter costs DuckDB a vector of 2,048 values for each column, 48 MiB for 2,000 columns.
   */
  readonly separatorLines?: boolean;
}

/**
 * Largest single row `read_json` accepts. DuckDB sizes its read buffers from it, so it
 * stays at DuckDB's own default: a larger one would cost memory on every load.
 */
export const MAX_ROW_BYTES = 16 * 1024 * 1024;

/** Blank lines a CSV file may open with before its header. */
const MAX_BLANK_LINES = 1000;

/** Columns of a CSV file read at once for its header. */
const HEAD_SLICE = 250;

/** How a file's values are read before they are cast: JSON for JSON rows, text for CSV. */
function rawType(file: RowsFile): string {
  return file.csv ? "VARCHAR" : "JSON";
}

/**
 * The reader over a rows file (`$1`), its mapped keys read as `typeOf` says, under the
 * aliases of {@link sourceColumns}: `read_json` for JSON rows; for CSV a `read_csv`
 * subquery without blank lines, and with `numbered` each row's position as `row_number_`.
 */
function source(
  file: RowsFile,
  mapping: readonly KeyColumn[],
  typeOf: (m: KeyColumn) => string,
  numbered = false,
): string {
  const names = sourceColumns(file, mapping);
  if (file.csv) {
    // Every column of the file is declared, in order; those no column takes are read as text.
    const types = file.csv.columns.map((key) => {
      const m = mapping.find((m) => m.key === key);
      return m ? typeOf(m) : "VARCHAR";
    });
    const columns = types.map((type, i) => `${quoteLiteral(names[i]!)}: ${quoteLiteral(type)}`);
    const projection = numbered ? [...names, "row_number_"] : names;
    const { delimiter, quote, escape, skip } = file.csv;
    const reader = `read_csv($1, header=true, auto_detect=false, ` +
      `delim=${quoteLiteral(delimiter)}, quote=${quoteLiteral(quote)}, ` +
      `escape=${quoteLiteral(escape)}, skip=${skip}, columns={${columns.join(", ")}})`;
    const ordinality = numbered ? ` WITH ORDINALITY AS f(${names.join(", ")}, row_number_)` : "";
    // A line of empty fields is no record, as an empty row of a sheet is none.
    const filter = file.csv.separatorLines === false
      ? ""
      : ` WHERE NOT (${names.map((n) => `${n} IS NULL`).join(" AND ")})`;
    return `(SELECT ${projection.join(", ")} FROM ${reader}${ordinality}${filter})`;
  }
  const columns = mapping.map((m) => `${quoteLiteral(m.key)}: ${quoteLiteral(typeOf(m))}`);
  return `read_json($1, format='newline_delimited', records=true, columns={${columns.join(", ")}})`;
}

/** Aliases for the mapped keys, so later clauses never quote a request's key. */
function aliases(mapping: readonly KeyColumn[]): string[] {
  return mapping.map((_, i) => `k${i}`);
}

/** Every column of the source in order: the mapped keys' aliases, and for CSV the rest. */
function sourceColumns(file: RowsFile, mapping: readonly KeyColumn[]): string[] {
  if (!file.csv) return aliases(mapping);
  return file.csv.columns.map((key, i) => {
    const m = mapping.findIndex((m) => m.key === key);
    return m >= 0 ? `k${m}` : `u${i}`;
  });
}

/**
 * The source with its columns under their aliases and each row's 1-based position in the
 * request as `row_number_`.
 */
function numbered(
  file: RowsFile,
  mapping: readonly KeyColumn[],
  typeOf: (m: KeyColumn) => string,
): string {
  const names = sourceColumns(file, mapping).join(", ");
  return file.csv
    ? `${source(file, mapping, typeOf, true)} AS src(${names}, row_number_)`
    : `${source(file, mapping, typeOf)} WITH ORDINALITY AS src(${names}, row_number_)`;
}

/** The key `update` and `skip` resolve conflicts on: the primary key, else the only unique one. */
export function conflictKey(table: Table): readonly string[] | undefined {
  if (table.constraints.primary_key) return table.constraints.primary_key.columns;
  if (table.constraints.unique.length === 1) return table.constraints.unique[0]!.columns;
  return undefined;
}

/**
 * Inserts the rows of a spooled file into `table` inside the caller's transaction. DuckDB
 * errors propagate unchanged; {@link explainLoadFailure} turns them into answers.
 */
export async function loadRows(
  session: Session,
  table: Table,
  file: RowsFile,
  mapping: readonly KeyColumn[],
  onConflict: OnConflict,
): Promise<LoadCounts> {
  if (file.rows === 0) {
    return onConflict === "fail"
      ? { inserted: 0 }
      : { inserted: 0, [onConflict === "skip" ? "skipped" : "updated"]: 0 };
  }
  const target = qualified(table.schema, table.name);
  const before = await count(session, target);
  if (mapping.length === 0) {
    // Rows without keys: every column takes its default. SQL names at least one column, so
    // the first gets its own default spelled out (evaluated per row, like nextval).
    const first = table.columns[0];
    await session.run(
      `INSERT INTO ${target} (${quoteIdent(first?.name ?? PLACEHOLDER_COLUMN)})
       SELECT ${first?.default ?? "NULL"} FROM range($1::BIGINT) ${
        onConflict === "fail" ? "" : "ON CONFLICT DO NOTHING"
      }`,
      [file.rows],
    );
  } else {
    await session.run(insertStatement(table, file, mapping, onConflict), [file.path]);
  }
  const inserted = (await count(session, target)) - before;
  if (onConflict === "skip") return { inserted, skipped: file.rows - inserted };
  if (onConflict === "update") return { inserted, updated: file.rows - inserted };
  return { inserted };
}

/**
 * The INSERT of the rows of one spooled file (`$1`) into `table`, keys mapped to columns,
 * resolving key conflicts as `onConflict` says.
 */
function insertStatement(
  table: Table,
  file: RowsFile,
  mapping: readonly KeyColumn[],
  onConflict: OnConflict,
): string {
  const names = aliases(mapping);
  const typeOf = (m: KeyColumn) => readAs(m.column.type).type;
  const columnList = mapping.map((m) => quoteIdent(m.column.name));
  const values = mapping.map((m, i) => readAs(m.column.type).expression(names[i]!));
  /** The source when it keeps one row per key (as `numbered` gives it, filtered). */
  let deduped: string | undefined;
  let conflict = "";
  const key = conflictKey(table);
  const keyAliases = key?.map((k) => names[mapping.findIndex((m) => m.column.name === k)]) ?? [];
  const keyed = keyAliases.length > 0 && keyAliases.every((a) => a !== undefined);
  if (onConflict === "skip") {
    conflict = "ON CONFLICT DO NOTHING";
    if (keyed) {
      // Within one batch the first row of a key wins, the later ones are skipped.
      deduped = dedupe(file, mapping, keyAliases as string[], "ASC");
    }
  }
  if (onConflict === "update") {
    if (!key) throw noConflictKey(table);
    const rest = mapping.filter((m) => !key.includes(m.column.name));
    if (keyed) {
      // Within one batch the last row of a key wins, as if the rows were sent one by one.
      deduped = dedupe(file, mapping, keyAliases as string[], "DESC");
    }
    conflict = rest.length === 0
      ? "ON CONFLICT DO NOTHING"
      : `ON CONFLICT (${key.map(quoteIdent).join(", ")}) DO UPDATE SET ` +
        rest.map((m) => `${quoteIdent(m.column.name)} = excluded.${quoteIdent(m.column.name)}`)
          .join(", ");
  }
  const target = qualified(table.schema, table.name);
  const drawn = table.columns.filter((c) =>
    drawsFromSequence(c) && !mapping.some((m) => m.column.name === c.name)
  );
  if (drawn.length === 0) {
    const from = deduped ??
      `${source(file, mapping, typeOf)} AS src(${sourceColumns(file, mapping).join(", ")})`;
    // Every column in the table's order needs no list: DuckDB plans a list as one more step,
    // with a vector of 2,048 values for each column, 64 MiB for 2,000 text columns.
    const whole = mapping.length === table.columns.length &&
      mapping.every((m, i) => m.column.name === table.columns[i]!.name);
    return `INSERT INTO ${target} ${whole ? "" : `(${columnList.join(", ")}) `}SELECT ${
      values.join(", ")
    } FROM ${from} ${conflict}`;
  }
  // DuckDB evaluates a default, and any expression, on several threads at once, a chunk of
  // rows each, so the values a sequence gives out follow no order (in a batch of 5,000 rows
  // the last 904 drew 2049–2952). Drawn in any order, they are sorted and handed to the
  // rows in the order they were sent; the ORDER BY keeps that order in the table too,
  // except under ON CONFLICT, whose insert DuckDB does not keep in order (nor without one).
  const draws = drawn.map((c, i) => `${c.default} AS d${i}_`);
  const joins = drawn.map((_, i) =>
    `JOIN (SELECT d${i}_ AS v, row_number() OVER (ORDER BY d${i}_) AS p_ FROM rows_) d${i} USING (p_)`
  );
  // Positions are the rows' numbers, counted again where rows were left out.
  const dense = deduped === undefined && !file.csv;
  const position = dense ? "row_number_" : "row_number() OVER (ORDER BY row_number_)";
  return `INSERT INTO ${target} (${
    [...columnList, ...drawn.map((c) => quoteIdent(c.name))].join(", ")
  })
    WITH kept_ AS (SELECT * FROM ${deduped ?? numbered(file, mapping, typeOf)}),
      rows_ AS MATERIALIZED (SELECT *, ${position} AS p_, ${draws.join(", ")} FROM kept_)
    SELECT ${[...values, ...drawn.map((_, i) => `d${i}.v`)].join(", ")}
    FROM rows_ ${joins.join(" ")} ORDER BY p_ ${conflict}`;
}

/** Whether `column` is a serial one: its default draws from its sequence. */
function drawsFromSequence(column: Column): boolean {
  return column.default !== null && /^nextval\('([^']|'')*'\)$/.test(column.default);
}

/**
 * Inserts the rows of a spooled JSON file (`path`) into `table` inside the caller's
 * transaction, failing on any key conflict; `mapping` must not be empty. Returns how many
 * rows it inserted.
 */
export function insertRows(
  session: Session,
  table: Table,
  path: string,
  mapping: readonly KeyColumn[],
): Promise<number> {
  return session.changes(insertStatement(table, { path, rows: 0 }, mapping, "fail"), [path]);
}

/**
 * Appends the rows of spooled files to `table` as they arrive, inside the caller's
 * transaction, failing on any key conflict; `mapping` must not be empty. Returns the count.
 */
export async function appendParts(
  session: Session,
  table: Table,
  paths: AsyncIterable<string>,
  mapping: readonly KeyColumn[],
): Promise<number> {
  let inserted = 0;
  for await (const path of paths) inserted += await insertRows(session, table, path, mapping);
  return inserted;
}

/** The source keeping one row per key: the first (ASC) or the last (DESC) in the batch. */
function dedupe(
  file: RowsFile,
  mapping: readonly KeyColumn[],
  keyAliases: readonly string[],
  order: "ASC" | "DESC",
): string {
  return `${numbered(file, mapping, (m) => readAs(m.column.type).type)} ` +
    `QUALIFY ${keyAliases.map((a) => `${a} IS NULL`).join(" OR ")} OR ` +
    `row_number() OVER (PARTITION BY ${keyAliases.join(", ")} ORDER BY row_number_ ${order}) = 1`;
}

function noConflictKey(table: Table): ApiError {
  return ApiError.invalidData(
    `Table "${table.name}" has no primary key and not exactly one unique constraint, ` +
      `so rows cannot be matched for on_conflict`,
  );
}

async function count(session: Session, target: string): Promise<number> {
  const rows = await session.rows(`SELECT count(*) AS n FROM ${target}`);
  return Number(rows[0]!.n);
}

/**
 * Explains why {@link loadRows} failed, as the answer the client gets: which rows and
 * columns, up to the contract's 100 details. Runs outside the failed transaction.
 */
export async function explainLoadFailure(
  session: Session,
  table: Table,
  file: RowsFile,
  mapping: readonly KeyColumn[],
  error: unknown,
  tableExists = true,
): Promise<ApiError> {
  if (error instanceof ApiError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const firstLine = message.split("\n")[0] ?? "";
  const record = /record\/value (\d+)/.exec(firstLine);
  const row = record ? Number(record[1]) - 1 : undefined;
  if (
    /Malformed JSON|unexpected (character|end|content)|invalid (literal|number|string)/i.test(
      firstLine,
    )
  ) {
    return ApiError.badRequest(
      `The request body is not valid JSON${row === undefined ? "" : ` in row ${row}`}`,
      row === undefined ? undefined : [{ row, message: "Malformed JSON" }],
    );
  }
  if (file.csv && !/Conversion Error|Could not convert|Constraint Error/i.test(firstLine)) {
    if (/CSV Error|columns|quote|Invalid Input Error|Invalid unicode/i.test(message)) {
      return ApiError.badRequest(`The CSV file is malformed: ${csvProblem(message)}`);
    }
  }
  // Rows the spool pass could not vouch for are read by DuckDB, which finds the repeat.
  const repeat = /in line (\d+): Object .* has duplicate key "(.*)"$/.exec(firstLine);
  if (repeat && !file.csv) {
    return ApiError.repeatedKey(Number(repeat[1]) - 1, repeat[2]!);
  }
  if (/maximum_object_size|exceeds the maximum/i.test(firstLine)) {
    return ApiError.badRequest(`A row is larger than ${MAX_ROW_BYTES} bytes`);
  }
  if (/PRIMARY KEY or UNIQUE constraint|duplicate key/i.test(firstLine)) {
    const details = await conflictingRows(session, table, file, mapping, tableExists);
    return ApiError.conflict(
      `Rows conflict with a primary key or unique constraint of table "${table.name}"` +
        (details[0] ? `: ${details[0].message}` : ""),
      details,
    );
  }
  if (/foreign key/i.test(firstLine)) {
    return ApiError.invalidData(
      `Rows violate a foreign key of table "${table.name}": ${clean(firstLine)}`,
    );
  }
  const details = await badValues(session, file, mapping);
  if (details.length > 0) {
    return ApiError.invalidData(
      `Rows do not fit table "${table.name}": ${details[0]!.message}` +
        (details.length > 1 ? ` (and ${details.length - 1} more)` : ""),
      details,
    );
  }
  if (
    /Constraint Error|Conversion Error|Invalid Input Error|transform error|Could not convert/i.test(
      firstLine,
    )
  ) {
    return ApiError.invalidData(
      `Rows do not fit table "${table.name}": ${clean(firstLine)}`,
      row === undefined ? undefined : [{ row, message: clean(firstLine) }],
    );
  }
  throw error;
}

/** The gist of a CSV reader error: its line and what was wrong, without DuckDB's advice. */
function csvProblem(message: string): string {
  const lines = message.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const where = lines.find((l) => /^CSV Error on Line/i.test(l.replace(/^[\w ]+Error: /, "")));
  const what = lines.find((l) =>
    /expected|unterminated|quote|invalid|columns/i.test(l) && !/^(CSV Error|Possible)/i.test(l) &&
    !/^\*/.test(l)
  );
  const text = [where?.replace(/^[\w ]+Error: /, ""), what].filter(Boolean).join(": ");
  return clean(text || (lines[0] ?? "unreadable"));
}

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
  const columns = head[blank] ?? [];
  if (columns.length === 0 || columns.every((c) => c === "")) {
    throw ApiError.badRequest("The CSV file has no header row");
  }
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
  return { csv: { ...layout, columns }, types };
}

/** 400 for a file DuckDB cannot read as CSV; its other failures (out of memory) as they are. */
function unreadableCsv(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  return ApiError.badRequest(`The CSV file cannot be read: ${csvProblem(String(error))}`);
}

/** DuckDB's complaint without its category or the spool file's path. */
function clean(line: string): string {
  return engineMessage(new Error(line));
}

/** Rows whose values cannot be cast to their column, or are null in a NOT NULL column. */
export async function badValues(
  session: Session,
  file: RowsFile,
  mapping: readonly KeyColumn[],
): Promise<ErrorDetail[]> {
  if (mapping.length === 0) return [];
  const names = aliases(mapping);
  const checks: string[] = [];
  mapping.forEach((m, i) => {
    const a = names[i]!;
    const column = quoteLiteral(m.column.name);
    const failed = castFails(a, m.column, file);
    if (failed) {
      checks.push(
        `SELECT row_number_ - 1 AS row, ${column} AS col, 'Value ' || left(${a}::VARCHAR, 80) || ' is not a valid ${
          m.column.type.replaceAll("'", "")
        }' AS msg FROM src WHERE ${a} IS NOT NULL AND ${failed}`,
      );
    }
    if (!m.column.is_nullable) {
      checks.push(
        `SELECT row_number_ - 1 AS row, ${column} AS col, 'Column is NOT NULL but the value is null or missing' AS msg FROM src WHERE ${a} IS NULL`,
      );
    }
  });
  if (checks.length === 0) return [];
  const rows = await session.rows(
    `WITH src AS (SELECT * FROM ${numbered(file, mapping, () => rawType(file))})
     SELECT row, col, msg FROM (${
      checks.join(" UNION ALL ")
    }) ORDER BY row, col LIMIT ${MAX_DETAILS}`,
    [file.path],
  );
  return rows.map((r) => ({
    row: Number(r.row),
    column: r.col as string,
    message: r.msg as string,
  }));
}

/** A SQL condition true when the JSON value in `alias` does not fit `column`. */
function castFails(alias: string, column: Column, file: RowsFile): string | undefined {
  if (column.type === "VARCHAR" || column.type === "JSON") return undefined;
  const read = readAs(column.type);
  // A JSON value read as text is the string's own text (as read_json gives it), not JSON.
  const raw = read.type === "VARCHAR" && !file.csv
    ? `json_extract_string(${alias}, '$')`
    : `CAST(${alias} AS ${read.type})`;
  // try(CAST) rather than TRY_CAST: TRY_CAST of JSON to a LIST or STRUCT nulls only the
  // element that fails, so the row would pass this check and still fail the load.
  return `try(${read.expression(raw)}) IS NULL`;
}

/** Rows whose key repeats within the batch or already exists in the table. */
async function conflictingRows(
  session: Session,
  table: Table,
  file: RowsFile,
  mapping: readonly KeyColumn[],
  tableExists: boolean,
): Promise<ErrorDetail[]> {
  const keys = [
    ...(table.constraints.primary_key ? [table.constraints.primary_key] : []),
    ...table.constraints.unique,
  ];
  const names = aliases(mapping);
  const details: ErrorDetail[] = [];
  for (const key of keys) {
    const keyAliases = key.columns.map((k) => names[mapping.findIndex((m) => m.column.name === k)]);
    if (keyAliases.some((a) => a === undefined)) continue;
    const typed = numbered(file, mapping, (m) => readAs(m.column.type).type);
    const join = key.columns.map((k, i) => `t.${quoteIdent(k)} = src.${keyAliases[i]}`).join(
      " AND ",
    );
    const rows = await session.rows(
      `WITH src AS (SELECT * FROM ${typed})
       ${
        tableExists
          ? `SELECT row_number_ - 1 AS row, 'exists' AS why FROM src
         WHERE EXISTS (SELECT 1 FROM ${qualified(table.schema, table.name)} t WHERE ${join})
       UNION ALL`
          : ""
      }
       SELECT row_number_ - 1 AS row, 'repeats' AS why FROM src
         QUALIFY row_number() OVER (PARTITION BY ${keyAliases.join(", ")} ORDER BY row_number_) > 1
       ORDER BY 1 LIMIT ${MAX_DETAILS}`,
      [file.path],
    );
    for (const r of rows) {
      details.push({
        row: Number(r.row),
        column: key.columns.join(", "),
        message: r.why === "exists"
          ? `Key (${key.columns.join(", ")}) already exists (constraint "${key.name}")`
          : `Key (${
            key.columns.join(", ")
          }) repeats an earlier row of the batch (constraint "${key.name}")`,
      });
    }
  }
  return details.sort((a, b) => (a.row ?? 0) - (b.row ?? 0)).slice(0, MAX_DETAILS);
}

/** The order records are read in: primary key order, else insertion order. */
export function recordOrder(table: Table): string {
  const pk = table.constraints.primary_key;
  return pk ? pk.columns.map(quoteIdent).join(", ") : "rowid";
}

/**
 * Columns of a page rendered by one statement. Each expression of a statement holds vectors
 * sized to the rows (up to 2,048), and DuckDB's optimizer (common_subexpressions) takes time
 * growing with the square of the expressions: a page of 100 rows of 2,000 columns ran out of
 * 256 MiB in one statement, and 3 rows of 2,000 BIGINT columns took 12.5 s; in slices of 100
 * columns, 1 s.
 */
const RENDER_SLICE = 100;

/**
 * Whether {@link readRecords} reads `table` in more than one statement, which must then
 * share a snapshot: a transaction around it.
 */
export function readsInSlices(table: Table): boolean {
  return table.columns.length > RENDER_SLICE;
}

/**
 * One page of records as a JSON array text, and the number of all records. For a table of
 * many columns ({@link readsInSlices}), call it in a transaction.
 */
export async function readRecords(
  session: Session,
  table: Table,
  offset: number,
  limit: number,
): Promise<{ json: string; total: number }> {
  for (const n of [offset, limit]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`Not a row count: ${n}`);
  }
  const target = qualified(table.schema, table.name);
  // The page is chosen on the stored values and only its rows are rendered: rendered in the
  // same SELECT as the ORDER BY, every row of the table would be turned into JSON first.
  // "record order" cannot clash with a column: column names have no spaces.
  const keyed = table.constraints.primary_key !== null;
  const order = recordOrder(table);
  const page = `SELECT *${
    keyed ? "" : `, rowid AS "record order"`
  } FROM ${target} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`;
  const pageOrder = keyed ? order : `"record order"`;
  if (readsInSlices(table)) {
    // Each row's members, a slice of columns at a time, in the caller's snapshot.
    const [counted] = await session.rows(`SELECT count(*) AS total FROM ${target}`);
    const members: string[] = [];
    for (let from = 0; from < table.columns.length; from += RENDER_SLICE) {
      const slice = table.columns.slice(from, from + RENDER_SLICE);
      const parts = await session.rows(
        `SELECT ${
          jsonMembers(slice, from === 0)
        } AS part FROM (${page}) AS page ORDER BY ${pageOrder}`,
      );
      parts.forEach((p, i) => members[i] = (members[i] ?? "") + (p.part as string));
    }
    return { json: `[${members.map((m) => `{${m}}`).join(",")}]`, total: Number(counted!.total) };
  }
  // One statement, so one snapshot without a transaction around it; the checked integers
  // are written into it because a statement without bound values is one call to DuckDB.
  const [row] = await session.rows(
    `SELECT (SELECT count(*) FROM ${target}) AS total,
       (SELECT string_agg(${
      jsonObject(table.columns)
    }, ',' ORDER BY ${pageOrder}) FROM (${page}) AS page) AS json`,
  );
  return { json: `[${row?.json ?? ""}]`, total: Number(row!.total) };
}

/** The query giving one CSV line per record, in record order. */
export function csvQuery(table: Table): string {
  return `SELECT ${csvLine(table.columns)} AS line FROM ${
    qualified(table.schema, table.name)
  } ORDER BY ${recordOrder(table)}`;
}

/**
 * The CSV header line for `table`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { csvHeader } from "./rows.ts";
 *
 * const columns = [{ name: "id" }, { name: 'say "hi"' }, { name: "a,b" }];
 * assert.equal(csvHeader(columns), 'id,"say ""hi""","a,b"');
 * ```
 */
export function csvHeader(columns: readonly { name: string }[]): string {
  return columns.map((c) =>
    /[",\r\n]|^\s|\s$/.test(c.name) ? `"${c.name.replaceAll('"', '""')}"` : c.name
  ).join(",");
}
