/**
 * The result of one SELECT streamed as a file: CSV (RFC 4180, header first), NDJSON, a JSON
 * array, or Parquet, from one snapshot (the cursor's, in a `READ ONLY` transaction held for the
 * stream's life). The rows are read through a server-side cursor, a batch per `FETCH` as the
 * consumer pulls, and rendered here from PostgreSQL's own text (result_values.ts), so no
 * format holds the whole result in memory and the query's `$n` parameters stay bound (COPY
 * takes none). Parquet is written by DuckDB from a CSV spool file (duckdb/mod.ts).
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { writeAll } from "../../ingest/spool.ts";
import { type ParquetColumn, writeParquet } from "../duckdb/mod.ts";
import type { ResultColumn, ResultFormat } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Database, Param, Session } from "./database.ts";
import { explained } from "./engine_errors.ts";
import { workMem } from "./read_bounds.ts";
import { csvQuoted, csvRender, jsonRender, type Render, textRender } from "./result_values.ts";
import { quoteIdent } from "./sql.ts";
import { checkRowCounts } from "../shared/record_pages.ts";
import { type ResultFrame, resultFrame } from "../shared/exports.ts";

/** A SELECT and its `$n` parameters. */
export interface SelectQuery {
  readonly sql: string;
  readonly params?: readonly Param[];
}

/**
 * The query, or what gives it once the snapshot has begun: a function run on the stream's
 * session inside its transaction, to check or describe in the same snapshot (and to `SET
 * LOCAL` what the query should run under) before the query runs.
 */
export type SelectSource = SelectQuery | ((session: Session) => Promise<SelectQuery>);

/** How a result is read. */
export interface SelectOptions {
  /**
   * The query's deadline from the start: each statement (the source's, the `DECLARE`, each
   * `FETCH`) runs under `statement_timeout` of the time left, and past it the answer (or the
   * stream, once begun) fails with 408.
   */
  readonly timeoutMs?: number;
  /**
   * Whether {@link timeoutMs} is each statement's rather than the whole result's: an export
   * that goes on fetching batches runs as long as it needs, one whose first rows or next
   * batch take longer fails.
   */
  readonly perBatch?: boolean;
  /** Rows fetched at a time; 1,000 unless told. */
  readonly batchRows?: number;
  /** What an error of the query becomes; PostgreSQL's SQLSTATE mapping unless told. */
  readonly failure?: (error: unknown) => unknown;
}

/** A streamed result and its columns. */
export interface StreamedSelect {
  readonly columns: readonly ResultColumn[];
  readonly stream: ReadableStream<Uint8Array>;
}

const BATCH_ROWS = 1_000;
const CURSOR = quoteIdent("result");

/** A column as read: its name (made unique), its type's name, and how its values render. */
interface Column extends ResultColumn {
  readonly oid: number;
  readonly element?: { readonly oid: number };
}

/** An open cursor on a held session, its first batch read. */
interface Cursor {
  readonly columns: readonly Column[];
  /** The rows read first; the cursor is at its end when there were fewer than asked. */
  readonly first: readonly (readonly (string | null)[])[];
  /** The next `rows` rows. */
  fetch(rows: number): Promise<readonly (readonly (string | null)[])[]>;
  /** Ends the transaction and gives the session back; with an error, discards it if need be. */
  close(error?: unknown): Promise<void>;
  /** What an error becomes for the client. */
  failure(error: unknown): unknown;
}

/**
 * Streams the result of `source` in `format`, pulled by the consumer: CSV (header first, NULL
 * an empty cell), NDJSON, a JSON array, or Parquet (written by DuckDB, typed as DuckDB
 * types PostgreSQL's, text where it has no such type). Values render as on the DuckDB
 * engine: see result_values.ts. A column name repeated gets DuckDB's suffix (`id`, `id_1`).
 * The first batch is read before this answers, so a query that fails at once rejects here;
 * one that fails later, or is cut by its deadline, errors the stream rather than ending it.
 * A consumer that cancels ends the transaction and frees the connection.
 *
 * @example
 * ```ts ignore
 * const { columns, stream } = await streamSelect(context, {
 *   sql: 'SELECT * FROM "sales"."orders" WHERE amount > $1',
 *   params: [10],
 * }, "csv");
 * ```
 */
export async function streamSelect(
  context: StoreContext,
  source: SelectSource,
  format: ResultFormat,
  options: SelectOptions = {},
): Promise<StreamedSelect> {
  const batch = options.batchRows ?? BATCH_ROWS;
  const cursor = await openCursor(context.database, source, batch, options);
  if (format === "parquet") return await parquet(context, cursor, batch);
  const lines = renderer(format, cursor.columns);
  const encoder = new TextEncoder();
  let pending: readonly (readonly (string | null)[])[] | undefined = cursor.first;
  let started = false;
  let ended = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const rows = pending ?? await cursor.fetch(batch);
        pending = undefined;
        let text = started ? "" : lines.head;
        for (const row of rows) {
          text += (started ? lines.separator : "") + lines.row(row);
          started = true;
        }
        if (rows.length < batch) {
          ended = true;
          await cursor.close();
          text += lines.tail;
          if (text !== "") controller.enqueue(encoder.encode(text));
          controller.close();
        } else if (text !== "") controller.enqueue(encoder.encode(text));
      } catch (error) {
        ended = true;
        await cursor.close(error);
        controller.error(cursor.failure(error));
      }
    },
    async cancel() {
      if (ended) return;
      ended = true;
      await cursor.close();
    },
  }, { highWaterMark: 1 });
  return { columns: cursor.columns.map(({ name, type }) => ({ name, type })), stream };
}

/**
 * At most `limit` rows of `source` as the JSON text of an array of objects (rendered as
 * {@link streamSelect}'s `json`), and whether more followed: `limit + 1` rows are fetched.
 */
export async function readSelect(
  context: StoreContext,
  source: SelectSource,
  limit: number,
  options: SelectOptions = {},
): Promise<{ columns: readonly ResultColumn[]; json: string; truncated: boolean }> {
  checkRowCounts(0, limit);
  const cursor = await openCursor(context.database, source, limit + 1, options);
  await cursor.close();
  const row = jsonRow(cursor.columns);
  let length = 0;
  const rows = cursor.first.slice(0, limit).map((r) => {
    const text = row(r);
    length += text.length + 1;
    if (length > MAX_JSON_ANSWER_CHARS) {
      throw tooLargeForJson(`its rows pass ${MAX_JSON_ANSWER_CHARS} characters`);
    }
    return text;
  });
  return {
    columns: cursor.columns.map(({ name, type }) => ({ name, type })),
    json: `[${rows.join(",")}]`,
    truncated: cursor.first.length > limit,
  };
}

/** What a format writes first, between rows, per row and last. */
interface Lines extends Omit<ResultFrame, "end"> {
  readonly row: (row: readonly (string | null)[]) => string;
}

function renderer(format: Exclude<ResultFormat, "parquet">, columns: readonly Column[]): Lines {
  const header = columns.map((c) => csvQuoted(c.name)).join(",");
  const { end, ...frame } = resultFrame(format, header);
  const cells = columns.map((c) => csvRender(c));
  const row = format === "csv"
    ? (row: readonly (string | null)[]) =>
      row.map((v, i) => v === null ? "" : cells[i]!(v)).join(",")
    : jsonRow(columns);
  return { ...frame, row: (r) => row(r) + end };
}

/**
 * Longest value, in characters of its text, a JSON answer renders: V8 aborts the whole
 * process (not the request) when JSON.stringify meets a string near 300 million characters,
 * and PostgreSQL, unlike DuckDB, has no memory limit that stops a query making one first.
 */
export const MAX_JSON_VALUE_CHARS = 2 ** 27;

/** Longest `json` answer, in characters: what a JavaScript string can hold, with room left. */
const MAX_JSON_ANSWER_CHARS = 2 ** 28;

/** 503 for an answer too large to hold as JSON; not to be retried, so no `Retry-After`. */
function tooLargeForJson(what: string): ApiError {
  return ApiError.unavailable(
    `The answer is too large to hold in memory as JSON: ${what}; format=csv streams it`,
  );
}

/** A row as a JSON object keyed by column name. */
function jsonRow(columns: readonly Column[]): (row: readonly (string | null)[]) => string {
  const keys = columns.map((c) => `${JSON.stringify(c.name)}:`);
  const values: Render[] = columns.map((c) => jsonRender(c));
  const value = (v: string | null, i: number) => {
    if (v === null) return "null";
    if (v.length > MAX_JSON_VALUE_CHARS) {
      throw tooLargeForJson(
        `column "${columns[i]!.name}" holds a value of ${v.length} characters, more than ` +
          `${MAX_JSON_VALUE_CHARS}`,
      );
    }
    return values[i]!(v);
  };
  return (row) => `{${row.map((v, i) => keys[i]! + value(v, i)).join(",")}}`;
}

/**
 * Names made unique as DuckDB makes a subquery's: a name seen before gets `_1`, `_2`, … (the
 * first suffix not taken).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { uniqueNames } from "./result_formats.ts";
 *
 * assert.deepEqual(uniqueNames(["id", "id", "id_1", "x"]), ["id", "id_1", "id_1_1", "x"]);
 * ```
 */
export function uniqueNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((name) => {
    let unique = name;
    for (let i = 1; taken.has(unique); i++) unique = `${name}_${i}`;
    taken.add(unique);
    return unique;
  });
}

/** A session of the pool held until released, outside a callback's lifetime. */
export async function holdSession(
  database: Database,
): Promise<{ session: Session; release(error?: unknown): Promise<void> }> {
  let release!: (error?: unknown) => void;
  const released = new Promise<void>((resolve, reject) => {
    release = (error) => error === undefined ? resolve() : reject(error);
  });
  let ready!: (session: Session) => void;
  const given = new Promise<Session>((resolve) => ready = resolve);
  const whole = database.withSession(async (session) => {
    ready(session);
    await released;
  });
  const session = await Promise.race([given, whole.then(() => given)]);
  return {
    session,
    async release(error) {
      release(error);
      await whole.catch(() => {});
    },
  };
}

/**
 * The settings values are rendered under (result_values.ts relies on them), and the memory of
 * each sort and hash of the read (read_bounds.ts).
 */
export const SETTINGS = [
  `SET LOCAL work_mem = '${workMem()}'`,
  "SET LOCAL TimeZone = 'UTC'",
  "SET LOCAL DateStyle = 'ISO, YMD'",
  "SET LOCAL bytea_output = 'hex'",
  "SET LOCAL extra_float_digits = 1",
  // result_values.ts reads intervals in this style, PostgreSQL's default.
  "SET LOCAL IntervalStyle = 'postgres'",
];

async function openCursor(
  database: Database,
  source: SelectSource,
  firstRows: number,
  options: SelectOptions,
): Promise<Cursor> {
  const { session, release } = await holdSession(database);
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
  const failure = (error: unknown): unknown => {
    const code = (error as { code?: unknown }).code;
    if (code === "57014" && options.timeoutMs !== undefined) {
      return ApiError.queryTimeout(options.timeoutMs / 1000);
    }
    if (code === "53200") {
      return ApiError.unavailable(
        "The database ran out of memory; nothing was changed, try again",
        1,
      );
    }
    return options.failure ? options.failure(error) : explained(error);
  };
  // Each statement runs under the time left, so that the deadline is the whole query's, or
  // under the whole timeout, each batch's.
  const timed = async () => {
    if (deadline === undefined) return;
    const left = options.perBatch ? options.timeoutMs! : deadline - Date.now();
    if (left <= 0) throw ApiError.queryTimeout(options.timeoutMs! / 1000);
    await session.run("SELECT set_config('statement_timeout', $1, true)", [String(left)]);
  };
  const fetch = async (rows: number) => {
    await timed();
    return (await session.texts(`FETCH FORWARD ${rows} FROM ${CURSOR}`)).rows;
  };
  let closed = false;
  let uncount = () => {};
  const close = async (error?: unknown) => {
    if (closed) return;
    closed = true;
    const end = await session.run(error === undefined ? "COMMIT" : "ROLLBACK").then(
      () => undefined,
      (failed) => failed,
    );
    uncount();
    // A connection whose end failed may be in any state: it is not given back to the pool.
    await release(end === undefined ? undefined : end);
  };
  try {
    // READ COMMITTED: the cursor reads the snapshot of its DECLARE, after what the source
    // waits for (a table's lock). Under REPEATABLE READ the lock's own SELECT took the
    // snapshot before the wait, and a definition changed meanwhile was read stale.
    await session.run("BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY");
    // Open for the stream's life: the open_transactions gauge shows it.
    uncount = database.countTransaction();
    for (const setting of SETTINGS) await session.run(setting);
    // The source's own statements (a table's lock, the catalogue) count as the query's.
    await timed();
    const query = typeof source === "function" ? await source(session) : source;
    await timed();
    await session.run(
      `DECLARE ${CURSOR} NO SCROLL CURSOR FOR ${query.sql}`,
      query.params ?? [],
    );
    const first = await session.texts(`FETCH FORWARD ${firstRows} FROM ${CURSOR}`);
    const columns = await describe(session, first.fields);
    return { columns, first: first.rows, fetch, close, failure };
  } catch (error) {
    await close(error);
    throw failure(error);
  }
}

/** The fields' types as PostgreSQL names them, and, for an array, its element's type. */
async function describe(
  session: Session,
  fields: readonly { name: string; typeId: number; typeModifier: number }[],
): Promise<Column[]> {
  if (fields.length === 0) return [];
  const types = await session.rows(
    `SELECT pg_catalog.format_type(f.o, f.m) AS name, b.oid AS base,
            CASE WHEN b.typcategory = 'A' THEN b.typelem ELSE 0 END AS element
       FROM unnest($1::pg_catalog.oid[], $2::pg_catalog.int4[]) WITH ORDINALITY AS f(o, m, n)
       JOIN pg_catalog.pg_type t ON t.oid = f.o
       JOIN pg_catalog.pg_type b
         ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
      ORDER BY f.n`,
    [fields.map((f) => f.typeId), fields.map((f) => f.typeModifier)],
  );
  const names = uniqueNames(fields.map((f) => f.name));
  return fields.map((_, i) => {
    const type = types[i]!;
    const element = Number(type.element);
    return {
      name: names[i]!,
      type: String(type.name),
      oid: Number(type.base),
      ...(element ? { element: { oid: element } } : {}),
    };
  });
}

/** DuckDB's type for a PostgreSQL type's name in Parquet; VARCHAR (its text) for the rest. */
const PARQUET_TYPES: Readonly<Record<string, string>> = {
  "boolean": "BOOLEAN",
  "smallint": "SMALLINT",
  "integer": "INTEGER",
  "bigint": "BIGINT",
  "real": "FLOAT",
  "double precision": "DOUBLE",
  "date": "DATE",
  "uuid": "UUID",
  "bytea": "BLOB",
  "json": "JSON",
  "jsonb": "JSON",
};

/**
 * The DuckDB type a PostgreSQL type is written as in Parquet.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parquetType } from "./result_formats.ts";
 *
 * assert.equal(parquetType("numeric(10,2)"), "DECIMAL(10,2)");
 * assert.equal(parquetType("numeric(2,5)"), "DECIMAL(5,5)");
 * assert.equal(parquetType("timestamp(3) with time zone"), "TIMESTAMP WITH TIME ZONE");
 * assert.equal(parquetType("integer[]"), "INTEGER[]");
 * assert.equal(parquetType("numeric"), "VARCHAR");
 * ```
 */
export function parquetType(postgres: string): string {
  if (postgres.endsWith("[]")) {
    const element = parquetType(postgres.replace(/(\[\])+$/, ""));
    return element === "VARCHAR" || element === "BLOB" ? "VARCHAR" : `${element}[]`;
  }
  const decimal = /^numeric\((\d+),(\d+)\)$/.exec(postgres);
  // PostgreSQL takes a scale above the precision (numeric(2,5) holds ±0.00099); DuckDB's
  // DECIMAL wants the width to cover the scale.
  const width = decimal ? Math.max(Number(decimal[1]), Number(decimal[2])) : Infinity;
  if (width <= 38) return `DECIMAL(${width},${decimal![2]})`;
  if (/^timestamp(\(\d\))? without time zone$/.test(postgres)) return "TIMESTAMP";
  if (/^timestamp(\(\d\))? with time zone$/.test(postgres)) return "TIMESTAMP WITH TIME ZONE";
  if (/^time(\(\d\))? without time zone$/.test(postgres)) return "TIME";
  return PARQUET_TYPES[postgres] ?? "VARCHAR";
}

/**
 * The whole result spooled as CSV in the spool directory, written as Parquet by DuckDB, and
 * streamed from that file, whose name (and the spool's) is gone once it is open.
 */
async function parquet(context: StoreContext, cursor: Cursor, batch: number) {
  const dir = context.spoolDir;
  const id = crypto.randomUUID();
  const spool = `${dir}/result-${id}.csv`;
  const out = `${dir}/result-${id}.parquet`;
  const encoder = new TextEncoder();
  const cells = cursor.columns.map((c) => textRender(c));
  const line = (row: readonly (string | null)[]) =>
    `${row.map((v, i) => v === null ? "" : `"${cells[i]!(v).replaceAll('"', '""')}"`).join(",")}\n`;
  let file: Deno.FsFile;
  try {
    const writer = await Deno.open(spool, { write: true, createNew: true });
    try {
      let rows = cursor.first;
      while (true) {
        await writeAll(writer, encoder.encode(rows.map(line).join("")));
        if (rows.length < batch) break;
        rows = await cursor.fetch(batch);
      }
    } finally {
      writer.close();
    }
    await cursor.close();
    const columns: ParquetColumn[] = cursor.columns.map((c) => ({
      name: c.name,
      type: parquetType(c.type),
    }));
    await writeParquet(spool, columns, out, dir);
    file = await Deno.open(out);
  } catch (error) {
    await cursor.close(error);
    throw cursor.failure(error);
  } finally {
    await Deno.remove(spool).catch(() => {});
    await Deno.remove(out).catch(() => {});
  }
  return {
    columns: cursor.columns.map(({ name, type }) => ({ name, type })),
    stream: file.readable,
  };
}
