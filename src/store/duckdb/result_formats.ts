/**
 * The result of one SELECT streamed as a file: CSV (RFC 4180, header first), NDJSON, a JSON
 * array, or Parquet, each from one consistent snapshot. Values are rendered by the rules of
 * values.ts, as record pages render them; Parquet keeps DuckDB's own types. Table exports and
 * clients' queries both stream through here.
 *
 * @module
 */

import type { DuckDBValue } from "@duckdb/node-api";
import type { ResultColumn, ResultFormat } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Lines, Session } from "./database.ts";
import { bound, type BoundTypes } from "./session.ts";
import { underDeadline } from "./interrupts.ts";
import { parquetRefusal } from "./engine_errors.ts";
import { quoteIdent, quoteLiteral } from "./sql.ts";
import { checkRowCounts } from "../shared/record_pages.ts";
import { resultFrame } from "../shared/exports.ts";
import { csvLine, jsonObject, type RenderedColumn } from "./values.ts";

/** A SELECT and its bound values. */
export interface ResultQuery {
  readonly sql: string;
  readonly values?: DuckDBValue[];
  /** The types of `values`, where they are not to be inferred (see {@link BoundTypes}). */
  readonly types?: BoundTypes;
}

/**
 * What a result's `prepare` gives, in the result's snapshot: the query, and its columns when
 * the caller knows them (a table's, as described); else they are read from the statement.
 */
export interface PreparedResult {
  readonly query: ResultQuery;
  readonly columns?: readonly ResultColumn[];
}

/** A streamed result and its columns. */
export interface StreamedResult {
  readonly columns: readonly ResultColumn[];
  readonly stream: ReadableStream<Uint8Array>;
}

/** Options of a streamed result. */
export interface ResultOptions {
  /** Interrupts the query this long after it began; the stream breaks off if it has begun. */
  readonly timeoutMs?: number;
}

/**
 * The columns `query` gives: names as DuckDB gives them to a subquery's columns (a name
 * repeated gets a suffix: `id`, `id_1`), types as DuckDB names them, an alias (JSON) by its
 * alias. Read from the query run with its values and `LIMIT 0`, which the optimizer answers
 * without reading: a prepared statement cannot tell the type of a parameter nothing types
 * (`SELECT $1`) before it runs.
 */
export async function describeResult(
  session: Session,
  query: ResultQuery,
): Promise<ResultColumn[]> {
  const reader = await session.connection.runAndReadAll(
    `SELECT * FROM (${query.sql}) AS "described" LIMIT 0`,
    bound(query.values),
    query.types,
  );
  const types = reader.columnTypes();
  return reader.columnNames().map((name, i) => {
    const type = types[i]!;
    return { name, type: type.alias ?? String(type) };
  });
}

/**
 * The CSV header line for `table`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { csvHeader } from "./result_formats.ts";
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

/**
 * The statement giving one text line per row of `query` in `format`, from its result as a
 * subquery whose columns are renamed by position: a result may hold two columns of one name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resultLines } from "./result_formats.ts";
 *
 * const lines = resultLines("csv", { sql: "SELECT 1 AS a" }, [{ name: "a", type: "INTEGER" }]);
 * assert.equal(lines.first, "a\n");
 * assert.match(lines.sql, /FROM \(SELECT 1 AS a\) AS "result"\("c0"\)$/);
 * ```
 */
export function resultLines(
  format: Exclude<ResultFormat, "parquet">,
  query: ResultQuery,
  columns: readonly ResultColumn[],
): Lines {
  const rendered: RenderedColumn[] = columns.map((c, i) => ({ ...c, ref: quoteIdent(`c${i}`) }));
  const line = format === "csv" ? csvLine(rendered) : jsonObject(rendered);
  // A table may have no columns, and an empty list of names is not SQL.
  const refs = rendered.length ? `(${rendered.map((c) => c.ref).join(", ")})` : "";
  const sql = `SELECT ${line} AS line FROM (${query.sql}) AS "result"${refs}`;
  const { head, separator, end, tail } = resultFrame(format, csvHeader(columns));
  const { values, types } = query;
  return { first: head, sql, values, types, separator, terminator: end, last: tail };
}

/**
 * Streams the result of the query `prepare` gives in `format`, from one snapshot: `prepare`
 * runs in it (to describe a table, or check a query), then the query. CSV, NDJSON and JSON
 * are rendered as the rows are read, the connection held until the stream ends; Parquet is
 * written by DuckDB to a file in the spool directory, unlinked once opened, and streamed
 * from it, so no format holds the whole result in memory.
 */
export async function streamResult(
  context: StoreContext,
  format: ResultFormat,
  prepare: (session: Session) => Promise<PreparedResult>,
  options: ResultOptions = {},
): Promise<StreamedResult> {
  if (format === "parquet") return await parquet(context, prepare, options);
  let columns: readonly ResultColumn[] = [];
  const stream = await context.database.streamLines(async (session) => {
    const { query, columns: known } = await prepare(session);
    columns = known ?? await describeResult(session, query);
    return resultLines(format, query, columns);
  }, options);
  return { columns, stream };
}

/**
 * At most `limit` rows of the query `prepare` gives, as the JSON text of an array of
 * objects (rendered as record pages are), and whether more rows followed.
 */
export async function readResult(
  context: StoreContext,
  prepare: (session: Session) => Promise<PreparedResult>,
  limit: number,
  options: ResultOptions = {},
): Promise<{ columns: readonly ResultColumn[]; json: string; truncated: boolean }> {
  checkRowCounts(0, limit);
  const { columns, stream } = await streamResult(context, "ndjson", async (session) => {
    const prepared = await prepare(session);
    const columns = prepared.columns ?? await describeResult(session, prepared.query);
    return { query: limited(prepared.query, limit), columns };
  }, options);
  const text = await new Response(stream).text();
  return { columns, ...page(text === "" ? [] : text.slice(0, -1).split("\n"), limit) };
}

/**
 * {@link readResult} of a query whose `columns` are known, in one statement on a connection
 * of its own: no transaction is needed to make a description and the rows one snapshot.
 */
export async function readKnownResult(
  context: StoreContext,
  query: ResultQuery,
  columns: readonly ResultColumn[],
  limit: number,
  options: ResultOptions = {},
): Promise<{ columns: readonly ResultColumn[]; json: string; truncated: boolean }> {
  checkRowCounts(0, limit);
  const { sql, values, types } = resultLines("ndjson", limited(query, limit), columns);
  const rows = await context.database.withSession((session) =>
    underDeadline(
      session.connection,
      options.timeoutMs,
      () => session.rows(sql, values ?? [], types),
    )
  );
  return { columns, ...page(rows.map((row) => row.line as string), limit) };
}

/**
 * `query` cut to one row past `limit`, which says whether the result was cut short. A LIMIT
 * over the query as a subquery keeps its order (DuckDB preserves insertion order).
 */
function limited(query: ResultQuery, limit: number): ResultQuery {
  return {
    sql: `SELECT * FROM (${query.sql}) AS "limited" LIMIT ${limit + 1}`,
    values: query.values,
    types: query.types,
  };
}

/** The JSON array of the first `limit` of `lines`, and whether there were more. */
function page(lines: readonly string[], limit: number): { json: string; truncated: boolean } {
  return { json: `[${lines.slice(0, limit).join(",")}]`, truncated: lines.length > limit };
}

async function parquet(
  context: StoreContext,
  prepare: (session: Session) => Promise<PreparedResult>,
  options: ResultOptions,
): Promise<StreamedResult> {
  const path = `${context.spoolDir}/result-${crypto.randomUUID()}.parquet`;
  let columns: readonly ResultColumn[] = [];
  let file: Deno.FsFile;
  try {
    // A transaction makes `prepare`'s reads and the COPY one snapshot.
    await context.database.transaction((session) =>
      underDeadline(session.connection, options.timeoutMs, async () => {
        const { query, columns: known } = await prepare(session);
        columns = known ?? await describeResult(session, query);
        await session.run(
          // As a subquery, as the other formats read it: a repeated name gets a suffix.
          `COPY (SELECT * FROM (${query.sql}) AS "result") TO ${
            quoteLiteral(path)
          } (FORMAT parquet)`,
          query.values ?? [],
          query.types,
        );
      })
    ).catch((error) => {
      // Raised while the file is written, before any byte of the answer: a status can say so.
      throw parquetRefusal(error) ?? error;
    });
    file = await Deno.open(path);
  } finally {
    // Open or not, the name goes now: the open file is read to its end, then it is gone.
    await Deno.remove(path).catch(() => {});
  }
  return { columns, stream: fileStream(file) };
}

/** Bytes read from the file at a time: large reads, few chunks. */
const READ_SIZE = 1 << 20;

/**
 * The rest of `file` as a stream that reads only when the consumer pulls (one chunk ahead at
 * most), so a slow client holds back the reads rather than queueing the file in memory; the
 * file is closed at its end, on an error, or when the consumer cancels.
 */
export function fileStream(
  file: Deno.FsFile,
  size = READ_SIZE,
): ReadableStream<Uint8Array<ArrayBuffer>> {
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      file.close();
    } catch {
      // Already closed.
    }
  };
  return new ReadableStream<Uint8Array<ArrayBuffer>>({
    async pull(controller) {
      const buffer = new Uint8Array(size);
      let filled = 0;
      try {
        while (filled < size) {
          const n = await file.read(buffer.subarray(filled));
          if (n === null) break;
          filled += n;
        }
      } catch (error) {
        close();
        controller.error(error);
        return;
      }
      if (filled > 0) controller.enqueue(filled === size ? buffer : buffer.slice(0, filled));
      if (filled < size) {
        close();
        controller.close();
      }
    },
    cancel() {
      close();
    },
  }, { highWaterMark: 1 });
}
