/**
 * Small inserts through DuckDB's appender. A few rows cost far more in `read_json`'s
 * planning and file round trip than in the rows themselves; the appender takes them in one
 * native call with the same constraint checks. Only rows whose every value has exactly one
 * meaning in its column are taken: anything `read_json` would convert (a number into text,
 * a fraction into an integer) or might reject goes the ordinary way instead, so both paths
 * store the same values.
 *
 * @module
 */

import {
  type DuckDBAppender,
  DuckDBDateValue,
  DuckDBTimestampValue,
  DuckDBTypeId,
} from "@duckdb/node-api";
import type { Table } from "../../catalog/model.ts";
import type { KeyColumn } from "../../catalog/rows.ts";
import type { Session } from "./database.ts";
import { offsetBeyondLimit } from "./values.ts";

/** Largest body (all members of a group together) parsed here; larger ones go to `read_json`. */
export const APPEND_BYTES = 256 * 1024;
/**
 * Most rows appended at once. DuckDB's appender flushes by itself every 204,800 rows (100
 * vectors, in DuckDB 1.5), and outside a transaction each flush commits on its own; below
 * that, the one flush on closing takes all rows or none. (`APPEND_BYTES` alone keeps a
 * group under 90,000 rows of `{}`.)
 */
export const APPEND_ROWS = 100_000;

/** Returned by a column's `take` for a value this path does not carry. */
const REFUSED = Symbol("refused");

/** How a column takes JSON values: checked and converted, then appended. */
interface ColumnWriter {
  readonly typeId: DuckDBTypeId;
  /** The value to append, or {@link REFUSED}; never called with null. */
  take(value: unknown): unknown;
  append(appender: DuckDBAppender, value: never): void;
}

/** Rows checked and converted for the appender, row-major, one value per table column. */
export interface PlainRows {
  readonly writers: readonly ColumnWriter[];
  readonly values: readonly unknown[];
  readonly rows: number;
}

/**
 * Parses bodies of newline-delimited JSON objects (as the spool keeps small bodies) into
 * values for every column of `table`, keys mapped by `mapping`. Undefined when any column
 * or value is not one this path carries exactly, the rows are not `rows` objects, or they
 * are more than {@link APPEND_ROWS}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { plainRows } from "./append.ts";
 *
 * const column = { id: 1, name: "n", type: "INTEGER", default: null, is_nullable: true };
 * const table = { columns: [column] };
 * const body = (text: string) => [new TextEncoder().encode(text)];
 * assert.deepEqual(plainRows(table, [{ key: "n", column }], body('{"n":1}\n{"n":null}\n'), 2)?.values, [1, null]);
 * assert.equal(plainRows(table, [{ key: "n", column }], body('{"n":1.5}\n'), 1), undefined);
 * assert.equal(plainRows(table, [{ key: "n", column }], body('{"n":1,"n":2}\n'), 1), undefined);
 * ```
 */
export function plainRows(
  table: Pick<Table, "columns">,
  mapping: readonly KeyColumn[],
  bodies: readonly Uint8Array[],
  rows: number,
): PlainRows | undefined {
  if (rows > APPEND_ROWS) return undefined;
  const writers: ColumnWriter[] = [];
  const keys: (string | undefined)[] = [];
  for (const column of table.columns) {
    const writer = WRITERS.get(column.type);
    const key = mapping.find((m) => m.column.name === column.name)?.key;
    // A column the rows leave out gets its default; only a NULL one is appended as such.
    if (!writer || (key === undefined && column.default !== null)) return undefined;
    writers.push(writer);
    keys.push(key);
  }
  if (mapping.length === 0 || table.columns.length === 0) return undefined;
  const values: unknown[] = [];
  let count = 0;
  const decoder = new TextDecoder();
  for (const body of bodies) {
    for (const line of decoder.decode(body).split("\n")) {
      if (line === "") continue;
      const row: unknown = JSON.parse(line);
      if (typeof row !== "object" || row === null || Array.isArray(row)) return undefined;
      // read_json refuses a repeated key; JSON.parse would keep the last one quietly.
      if (Object.keys(row).length !== memberCount(line)) return undefined;
      for (let i = 0; i < writers.length; i++) {
        const key = keys[i];
        const value = key === undefined ? null : (row as Record<string, unknown>)[key] ?? null;
        const taken = value === null ? null : writers[i]!.take(value);
        if (taken === REFUSED) return undefined;
        values.push(taken);
      }
      count++;
    }
  }
  return count === rows && count > 0 ? { writers, values, rows: count } : undefined;
}

/**
 * The writers' types an appender of each cached description's table has matched. Reading a
 * column's type hands JavaScript a native object, and under Deno each such object leaves a
 * few dozen bytes behind for good (docs/operations.md, "Known limits"). A cached description
 * is frozen and stays the same object until a definition changes (every change empties the
 * cache), so the same types for it are compared once, not for every group.
 */
const matchedTypes = new WeakMap<Table, string>();

/**
 * Appends `rows` to `table` in one flush: into the session's open transaction, or, in a
 * session outside one, as a transaction of its own that the flush commits (at most
 * {@link APPEND_ROWS} rows, all or none). Throws, having appended nothing that could be
 * flushed later, when the table's columns are not the writers' or a constraint fails; a
 * caller in a transaction rolls it back.
 */
export async function appendRows(session: Session, table: Table, rows: PlainRows): Promise<void> {
  const appender = await session.appender(table.schema, table.name);
  try {
    // The description is the table's, read under the same locks; this only guards the order.
    const types = rows.writers.map((w) => w.typeId).join();
    if (
      appender.columnCount !== rows.writers.length ||
      (matchedTypes.get(table) !== types &&
        rows.writers.some((w, i) => appender.columnType(i).typeId !== w.typeId))
    ) {
      throw new Error(`The appender's columns of "${table.name}" differ from its description`);
    }
    if (Object.isFrozen(table)) matchedTypes.set(table, types);
    const { writers, values } = rows;
    for (let v = 0; v < values.length;) {
      for (const writer of writers) {
        const value = values[v++];
        if (value === null) appender.appendNull();
        else writer.append(appender, value as never);
      }
      appender.endRow();
    }
    session.close(appender);
  } catch (error) {
    // Rows still buffered would be flushed when the appender is collected, in whatever
    // transaction its connection is in by then.
    appender.clear();
    appender.closeSync();
    throw error;
  }
}

/** Top-level members of one JSON object's text (commas outside strings at depth one). */
function memberCount(text: string): number {
  let depth = 0;
  let commas = 0;
  let empty = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string, escapes included.
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) {
        if (text.charCodeAt(i) === 0x5c) i++;
      }
      if (depth === 1) empty = false;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && depth === 1) commas++;
  }
  return empty ? 0 : commas + 1;
}

function integer(
  typeId: DuckDBTypeId,
  min: number,
  max: number,
  append: (appender: DuckDBAppender, value: number) => void,
): ColumnWriter {
  return {
    typeId,
    take: (v) => Number.isInteger(v) && (v as number) >= min && (v as number) <= max ? v : REFUSED,
    append,
  };
}

function wideInteger(
  typeId: DuckDBTypeId,
  min: number,
  append: (appender: DuckDBAppender, value: bigint) => void,
): ColumnWriter {
  // Beyond 2^53 JSON.parse has already rounded the number; read_json has not.
  return {
    typeId,
    take: (v) => Number.isSafeInteger(v) && (v as number) >= min ? BigInt(v as number) : REFUSED,
    append,
  };
}

const DAY = String.raw`(\d{4})-(\d{2})-(\d{2})`;
const TIME = String.raw`[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?`;
const DATE = new RegExp(`^${DAY}$`);
const TIMESTAMP = new RegExp(`^${DAY}${TIME}$`);
const TIMESTAMP_ZONED = new RegExp(String.raw`^${DAY}${TIME}(Z|[+-]\d{2}:\d{2})?$`);
const MS_PER_DAY = 86_400_000;

/**
 * Microseconds since the epoch of a matched date and time, or undefined for a date or time
 * that does not exist (2026-02-30, 24:00), a year before 1 or a UTC offset beyond ±15:59:
 * those are `read_json`'s to judge, by the rules of `readAs` (values.ts).
 */
function microseconds(match: RegExpExecArray): bigint | undefined {
  const [, y, mo, d, h = "0", mi = "0", s = "0", fraction = "", zone = "Z"] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (year < 1 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1) return undefined;
  if (date.getUTCDate() !== day) return undefined;
  let ms = date.getTime() + ((Number(h) * 60 + Number(mi)) * 60 + Number(s)) * 1000;
  if (zone !== "Z") {
    if (offsetBeyondLimit(match.input)) return undefined;
    const [hours, minutes] = [Number(zone.slice(1, 3)), Number(zone.slice(4, 6))];
    ms -= (zone[0] === "-" ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  }
  return BigInt(ms) * 1000n + BigInt(fraction.padEnd(6, "0"));
}

function timestamp(
  typeId: DuckDBTypeId,
  pattern: RegExp,
  append: (appender: DuckDBAppender, micros: bigint) => void,
): ColumnWriter {
  return {
    typeId,
    take(v) {
      const match = typeof v === "string" ? pattern.exec(v) : null;
      return (match && microseconds(match)) ?? REFUSED;
    },
    append,
  };
}

/** The writers by column type, as DuckDB names types in a table's description. */
const WRITERS: ReadonlyMap<string, ColumnWriter> = new Map<string, ColumnWriter>([
  ["BOOLEAN", {
    typeId: DuckDBTypeId.BOOLEAN,
    take: (v) => typeof v === "boolean" ? v : REFUSED,
    append: (a, v: boolean) => a.appendBoolean(v),
  }],
  ["TINYINT", integer(DuckDBTypeId.TINYINT, -128, 127, (a, v) => a.appendTinyInt(v))],
  ["SMALLINT", integer(DuckDBTypeId.SMALLINT, -32768, 32767, (a, v) => a.appendSmallInt(v))],
  ["INTEGER", integer(DuckDBTypeId.INTEGER, -(2 ** 31), 2 ** 31 - 1, (a, v) => a.appendInteger(v))],
  ["UTINYINT", integer(DuckDBTypeId.UTINYINT, 0, 255, (a, v) => a.appendUTinyInt(v))],
  ["USMALLINT", integer(DuckDBTypeId.USMALLINT, 0, 65535, (a, v) => a.appendUSmallInt(v))],
  ["UINTEGER", integer(DuckDBTypeId.UINTEGER, 0, 2 ** 32 - 1, (a, v) => a.appendUInteger(v))],
  [
    "BIGINT",
    wideInteger(DuckDBTypeId.BIGINT, -Number.MAX_SAFE_INTEGER, (a, v) => a.appendBigInt(v)),
  ],
  ["UBIGINT", wideInteger(DuckDBTypeId.UBIGINT, 0, (a, v) => a.appendUBigInt(v))],
  [
    "HUGEINT",
    wideInteger(DuckDBTypeId.HUGEINT, -Number.MAX_SAFE_INTEGER, (a, v) => a.appendHugeInt(v)),
  ],
  ["DOUBLE", {
    typeId: DuckDBTypeId.DOUBLE,
    // JSON.parse gives Infinity for a number too large for a double.
    take: (v) => typeof v === "number" && Number.isFinite(v) ? v : REFUSED,
    append: (a, v: number) => a.appendDouble(v),
  }],
  ["FLOAT", {
    typeId: DuckDBTypeId.FLOAT,
    take: (v) => typeof v === "number" && Number.isFinite(Math.fround(v)) ? v : REFUSED,
    append: (a, v: number) => a.appendFloat(v),
  }],
  ["VARCHAR", {
    typeId: DuckDBTypeId.VARCHAR,
    // A lone surrogate has no UTF-8 form, and a NUL may not survive the C string.
    take: (v) => typeof v === "string" && v.isWellFormed() && !v.includes("\0") ? v : REFUSED,
    append: (a, v: string) => a.appendVarchar(v),
  }],
  ["DATE", {
    typeId: DuckDBTypeId.DATE,
    take(v) {
      const match = typeof v === "string" ? DATE.exec(v) : null;
      const micros = match ? microseconds(match) : undefined;
      return micros === undefined ? REFUSED : Number(micros / 1000n) / MS_PER_DAY;
    },
    append: (a, days: number) => a.appendDate(new DuckDBDateValue(days)),
  }],
  [
    "TIMESTAMP",
    timestamp(
      DuckDBTypeId.TIMESTAMP,
      TIMESTAMP,
      (a, micros) => a.appendTimestamp(new DuckDBTimestampValue(micros)),
    ),
  ],
  [
    "TIMESTAMP WITH TIME ZONE",
    timestamp(
      DuckDBTypeId.TIMESTAMP_TZ,
      TIMESTAMP_ZONED,
      // The node binding appends TIMESTAMPTZ through a generic value, several times slower;
      // the same microseconds as a TIMESTAMP land unchanged.
      (a, micros) => a.appendTimestamp(new DuckDBTimestampValue(micros)),
    ),
  ],
]);
