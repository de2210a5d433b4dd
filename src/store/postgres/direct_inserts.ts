/**
 * Rows inserted straight into PostgreSQL: a body of at most {@link DIRECT_ROWS} rows and
 * {@link DIRECT_BYTES} goes in one `INSERT … SELECT` from `json_to_recordset` of the body,
 * bound as one parameter, when every value it holds has one exact meaning in its column.
 *
 * Exact means the value the staging (an in-memory DuckDB, docs/decisions.md "One ingest
 * path") would store, by the rules of {@link readAs}, which copy_json.ts's pass applies to the
 * body before the statement is sent; a body with another value is not sent. The statement
 * fails on a value PostgreSQL refuses, a null in a NOT NULL column or a key that exists: the
 * caller then loads the rows the staging's way, which stores what it stores and explains what
 * it refuses, row by row. So this path only ever adds speed: it stores the same values or
 * nothing. Larger bodies under `fail` go by COPY ({@link copyRows}).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { type KeyColumn, matchRowKeys } from "../../catalog/rows.ts";
import type { Table } from "../../catalog/model.ts";
import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import type { LoadCounts, OnConflict } from "../store.ts";
import { Lru } from "../../lru.ts";
import { copyRule, CopyText } from "./copy_json.ts";
import type { InsertionBlocks } from "./insertion_values.ts";
import { insertEmptyRows, insertResolving } from "./copy_rows.ts";
import type { Session } from "./database.ts";
import { INSERTION_COLUMN } from "./ddl.ts";
import { qualified, quoteIdent } from "./sql.ts";

/** Most rows a body may have to go straight in. */
export const DIRECT_ROWS = 10_000;
/** Most bytes a body may have to go straight in. */
export const DIRECT_BYTES = 8 * 1024 * 1024;
/** Longest key, in bytes, PostgreSQL keeps whole as a name: a longer one it would cut. */
const MAX_KEY_BYTES = 63;

/**
 * The type a plain value of a column of `type` is read as from the body (text for either
 * text type), or undefined when the column takes no plain values: the types copy_json.ts has
 * a rule for, by PostgreSQL's canonical name. Which values are plain is copy_json.ts's to
 * say, in the service, before the statement is sent: JSON booleans into boolean; integers (no
 * fraction, no exponent) into integer types, which refuse those out of range; numbers but a
 * negative zero into double precision; strings into text; ISO 8601 dates, and times of day
 * with at most microseconds, into date and timestamp (with an explicit `Z` or an offset
 * within ±15:59 for timestamp with time zone); canonical UUIDs. Any other value or type, and
 * the staging's way decides. A number into double precision is the
 * nearest double to it both ways; into real not always (the staging rounds it to a double
 * first), so real is left out.
 *
 * `json_to_recordset` reads each value with its type's input function, from a number's or a
 * boolean's text or a string's unescaped text, as a cast of that text does; into text
 * columns as text, which the insert's assignment to a `character varying(n)` then refuses
 * when longer, where a cast would cut it.
 */
function readAs(type: string): string | undefined {
  const rule = copyRule(type);
  if (!rule) return undefined;
  return rule.kind === "text" ? "text" : type;
}

/** A body's rows as one JSON array's text, with the keys they fill, to go in one statement. */
export interface DirectRows {
  /** The rows as JSON array text. */
  readonly json: string;
  readonly rows: number;
  readonly mapping: readonly KeyColumn[];
}

/** The columns a list of keys fills plainly, with the check of a body's values for them. */
interface PlainColumns {
  readonly mapping: readonly KeyColumn[];
  readonly values: CopyText;
}

/** Most lists of keys remembered for one description of a table. */
const MOST_KEY_LISTS = 8;

/**
 * What {@link plainColumns} found for each list of keys, by the description of the table it
 * matched them to (null for none): descriptions.ts keeps a table's description between its
 * inserts, and each insert of the same keys would find the same columns.
 */
const PLAIN_COLUMNS = new WeakMap<Table, Lru<string, PlainColumns | null>>();

/**
 * The columns the keys of `summary`'s rows fill when every one is of a plain type; undefined
 * when the rows may not go straight in: positional, keys not all known or not each one
 * column's, or a column of a type {@link readAs} does not take.
 */
export async function plainMapping(
  table: Table,
  summary: RowsSummary,
): Promise<readonly KeyColumn[] | undefined> {
  return (await plainColumns(table, summary))?.mapping;
}

/** {@link plainMapping}'s columns, with their check, remembered for `table`. */
async function plainColumns(
  table: Table,
  summary: RowsSummary,
): Promise<PlainColumns | undefined> {
  if (summary.form !== "objects" || !summary.keysComplete) return undefined;
  let known = PLAIN_COLUMNS.get(table);
  if (!known) PLAIN_COLUMNS.set(table, known = new Lru(MOST_KEY_LISTS));
  const keys = JSON.stringify(summary.keys);
  const found = known.get(keys);
  if (found !== undefined) return found ?? undefined;
  const columns = await matchedPlainly(table, summary);
  known.set(keys, columns ?? null);
  return columns;
}

async function matchedPlainly(
  table: Table,
  summary: RowsSummary,
): Promise<PlainColumns | undefined> {
  const encoder = new TextEncoder();
  if (summary.keys.some((key) => encoder.encode(key).length > MAX_KEY_BYTES)) return undefined;
  const { mapping, problems } = await matchRowKeys(
    table,
    summary,
    () => Promise.resolve(undefined),
  );
  if (problems.length > 0 || mapping.some((m) => !readAs(m.column.type))) return undefined;
  return { mapping, values: new CopyText(mapping) };
}

/**
 * `bytes` (newline-delimited JSON objects, as the spool keeps them) ready to go straight into
 * `table` in one statement, or undefined when they may not: too many, not
 * {@link plainMapping}'s, or a value copy_json.ts does not find plain.
 */
export async function directRows(
  table: Table,
  summary: RowsSummary,
  bytes: Uint8Array,
): Promise<DirectRows | undefined> {
  if (summary.rows > DIRECT_ROWS || bytes.length > DIRECT_BYTES) return undefined;
  const plain = await plainColumns(table, summary);
  if (!plain) return undefined;
  const { mapping, values } = plain;
  if (mapping.length > 0 && !values.plain(bytes)) return undefined;
  const json = jsonArray(bytes);
  return json === undefined ? undefined : { json, rows: summary.rows, mapping };
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Newline-delimited JSON rows as one JSON array's text; undefined when they are not UTF-8,
 * which the staging refuses.
 */
function jsonArray(bytes: Uint8Array): string | undefined {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0x0a) end--;
  const array = new Uint8Array(end + 2);
  array[0] = 0x5b;
  for (let i = 0; i < end; i++) array[i + 1] = bytes[i] === 0x0a ? 0x2c : bytes[i]!;
  array[end + 1] = 0x5d;
  try {
    return UTF8.decode(array);
  } catch {
    return undefined;
  }
}

/**
 * Inserts `direct` into `table` in the session's transaction, resolving key conflicts as
 * `onConflict` says; with `commit` under `fail`, committing the transaction in the same round
 * trip. Throws PostgreSQL's error, unexplained, for any row it does not take: the caller
 * rolls back and loads the rows the staging's way.
 */
export async function insertDirect(
  session: Session,
  table: Table,
  direct: DirectRows,
  onConflict: OnConflict,
  commit = false,
): Promise<LoadCounts> {
  const { mapping, rows } = direct;
  let inserted: number;
  if (rows === 0) inserted = 0;
  else if (mapping.length === 0) inserted = await insertEmptyRows(session, table, rows, onConflict);
  else {
    const names = mapping.map((_, i) => `k${i}`);
    const values = names.map((name) => `r_.${name}`);
    const from = `ROWS FROM (json_to_recordset($1::json) AS (${
      mapping.map((m) => `${quoteIdent(m.key)} ${readAs(m.column.type)}`).join(", ")
    })) WITH ORDINALITY AS r_(${names.join(", ")}, n_)`;
    const columns = mapping.map((m) => m.column.name);
    const insert = `INSERT INTO ${qualified(table.schema, table.name)} (${
      columns.map(quoteIdent).join(", ")
    }) SELECT ${values.join(", ")} FROM ${from} ORDER BY n_`;
    // Under fail with commit, prepared by SQL (planned once per connection) and run with the
    // body as a literal, so that the insert and the COMMIT go in one round trip.
    if (onConflict === "fail" && commit) {
      inserted = (await session.runAndCommit({
        prepared: {
          name: `insert_${createHash("sha1").update(insert).digest("hex")}`,
          text: insert,
        },
        args: [direct.json],
      })).count;
    } else if (onConflict === "fail") {
      inserted = await session.run(insert, [direct.json]);
    } else {
      const position = quoteIdent("\u0001position");
      inserted = await insertResolving(session, table, {
        columns,
        source: `(SELECT ${
          values.map((v, i) => `${v} AS ${quoteIdent(columns[i]!)}`).join(", ")
        }, n_ AS ${position} FROM ${from}) AS d_`,
        position,
        params: [direct.json],
      }, onConflict);
    }
  }
  if (onConflict === "skip") return { inserted, skipped: rows - inserted };
  if (onConflict === "update") return { inserted, updated: rows - inserted };
  return { inserted };
}

/**
 * Copies rows into `table` with `COPY … FROM STDIN`, each slice of `lines` (whole lines of
 * newline-delimited JSON objects, each used up before the next is asked for) turned into COPY
 * text as the copy reads on (copy_json.ts), for `fail` (no conflict resolved). Throws
 * copy_json.ts's `NotPlain` or PostgreSQL's error, unexplained, for any row it does not take: the
 * caller rolls back and loads the rows the staging's way. Answers how many rows were copied,
 * which must be `rows()`, asked once every line is read. With `insertions`, the rows take
 * their values of the insertion order from there (insertion_values.ts).
 */
export async function copyRows(
  session: Session,
  table: Table,
  mapping: readonly KeyColumn[],
  lines: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  rows: () => number,
  insertions?: InsertionBlocks,
): Promise<LoadCounts> {
  if (mapping.length === 0) {
    return { inserted: await insertEmptyRows(session, table, rows(), "fail") };
  }
  const text = new CopyText(mapping, insertions);
  const columns = mapping.map((m) => quoteIdent(m.column.name));
  if (insertions) columns.push(quoteIdent(INSERTION_COLUMN));
  const copied = await session.copyIn(
    `COPY ${qualified(table.schema, table.name)} (${columns.join(", ")}) FROM STDIN`,
    (async function* () {
      for await (const slice of lines) yield text.rows(slice);
    })(),
  );
  if (copied !== rows()) throw new Error(`COPY took ${copied} rows of ${rows()}`);
  return { inserted: copied };
}

/** Input bytes turned into COPY text at a time: small enough for the copy to run alongside. */
const SLICE_BYTES = 256 * 1024;

/**
 * The files at `paths` (each whole lines) in slices of about {@link SLICE_BYTES}, each ending
 * after a line: the pass over one slice holds the event loop, and the copy's writes wait for
 * it to end. Each slice is read into the same buffer, given again once the caller asks for
 * the next: a new buffer the size of a file costs more in page faults than the read (34 MB:
 * 290 ms by `Deno.readFile`, 120 ms for the faults alone, on this service's machines).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileSlices } from "./direct_inserts.ts";
 *
 * const path = await Deno.makeTempFile();
 * const line = `${JSON.stringify({ text: "x".repeat(100_000) })}\n`;
 * await Deno.writeTextFile(path, line.repeat(7));
 * const seen: string[] = [];
 * for await (const slice of fileSlices([path, path])) seen.push(new TextDecoder().decode(slice));
 * assert.ok(seen.length > 2 && seen.every((s) => s.endsWith("\n")));
 * assert.equal(seen.join(""), line.repeat(14));
 * ```
 */
export async function* fileSlices(
  paths: AsyncIterable<string> | Iterable<string>,
): AsyncGenerator<Uint8Array> {
  let buffer = new Uint8Array(2 * SLICE_BYTES);
  for await (const path of paths) {
    using file = await Deno.open(path);
    // Bytes read and not yet given: a line not yet ended.
    let held = 0;
    for (;;) {
      if (held === buffer.length) {
        const grown = new Uint8Array(2 * buffer.length);
        grown.set(buffer);
        buffer = grown;
      }
      const read = await file.read(buffer.subarray(held));
      if (read === null) {
        if (held > 0) yield buffer.subarray(0, held);
        break;
      }
      held += read;
      if (held < SLICE_BYTES) continue;
      const end = buffer.lastIndexOf(0x0a, held - 1) + 1;
      if (end === 0) continue;
      yield buffer.subarray(0, end);
      buffer.copyWithin(0, end, held);
      held -= end;
    }
  }
}
