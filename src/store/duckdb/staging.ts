/**
 * Staging for another engine's loads: an in-memory DuckDB reads rows (JSON or CSV) with the
 * same readers, inference, sniffing and row-level checks as this store's own loads, into a
 * table of the target's columns, and writes the rows it took as CSV (PostgreSQL's dialect:
 * every value quoted, NULL an empty unquoted field) for the other engine to copy in.
 *
 * @module
 */

import { checkWidth, MAX_COLUMNS } from "../../catalog/definition.ts";
import type { Column, Table, TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import type { CsvSource, OnConflict, RowsSource } from "../store.ts";
import { csvRowsFile } from "./csv_layout.ts";
import { Database, type Session } from "./database.ts";
import { inferPlan, MoreKeys } from "./inference.ts";
import { explainLoadFailure } from "./load_errors.ts";
import { keysOutside, mapRowKeys } from "./row_keys.ts";
import { aliases, insertRows, loadRows, numbered } from "./rows.ts";
import { type RowsFile, withLocalFile } from "./sources.ts";
import { qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import { type NestedType, parseType } from "./types.ts";
import { readAs } from "./values.ts";

/** Rows staged for another engine: a CSV file (no header) of some of the target's columns. */
export interface StagedRows {
  /** The target's columns the CSV file holds, in order; the others take their defaults. */
  readonly columns: readonly string[];
  /** The CSV file, in the spool directory; the caller removes it once copied. */
  readonly path: string;
  /** Rows in the CSV file. */
  readonly rows: number;
  /**
   * Rows the request sent. With `skip` or `update` on a key the rows give, the file keeps
   * every row, in the order they were sent, and the target resolves conflicts, those within
   * the rows too.
   */
  readonly sent: number;
}

/** A column of a table inferred from rows alone: its name and its type as the contract writes it. */
export interface InferredColumn {
  readonly name: string;
  readonly type: string;
}

/** Rows held for staging: what can be inferred of them, and their staging into a table. */
export interface StagingRows {
  /** The rows' columns with types inferred from a sample, or from every row. */
  infer(ref: TableRef, fromAll: boolean): Promise<InferredColumn[]>;
  /**
   * Reads the rows as `table`'s columns (types as the target engine names them) into CSV:
   * 422 with row-level details (at most 100) for keys no column has, values a column cannot
   * take, nulls in NOT NULL columns and keys repeated within the rows under `fail`; 400 for
   * rows that cannot be read.
   */
  stage(table: Table, onConflict: OnConflict): Promise<StagedRows>;
  /**
   * For explaining a key conflict: a CSV file (the caller removes it) of each row's number
   * (0-based) and its values of `key`'s columns of `table`; undefined when the rows do not
   * give every column of the key.
   */
  keyRows(table: Table, key: readonly string[]): Promise<string | undefined>;
}

/** An in-memory DuckDB that stages rows for another engine. */
export interface Staging {
  /** Runs `work` on JSON rows (newline-delimited objects or arrays). */
  withRows<T>(source: RowsSource, work: (rows: StagingRows) => Promise<T>): Promise<T>;
  /** Runs `work` on a CSV file's rows: delimiter and quoting sniffed, the first line the header. */
  withCsv<T>(source: CsvSource, work: (rows: StagingRows) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Opens an in-memory DuckDB, hardened as the store's own, whose readers may touch only
 * `spoolDir`, where it also writes its CSV files.
 */
export async function openStaging(
  options: {
    readonly spoolDir: string;
    readonly tempDir: string;
    readonly memoryBytes?: number;
    /** Most columns a target table may have; rows with more keys are 422 naming it. */
    readonly maxColumns?: number;
  },
): Promise<Staging> {
  const database = await Database.open({ path: ":memory:", ...options });
  const { spoolDir } = options;
  return {
    withRows: (source, work) =>
      withLocalFile(
        spoolDir,
        source,
        (path) => work(stagingRows(database, spoolDir, { ...source, path }, options.maxColumns)),
      ),
    withCsv: (source, work) =>
      withLocalFile(spoolDir, source, async (path) => {
        const file = await database.withSession((session) => csvRowsFile(session, path, source));
        return await work(stagingRows(database, spoolDir, file, options.maxColumns));
      }),
    close: () => database.close(),
  };
}

function stagingRows(
  database: Database,
  spoolDir: string,
  first: RowsFile,
  maxColumns = MAX_COLUMNS,
): StagingRows {
  let file = first;
  const checkKeys = () => {
    if (file.form === "objects") checkWidth("The rows have", file.keys.length, "keys", maxColumns);
  };
  return {
    async infer(ref, fromAll) {
      const plan = await database.withSession((session) =>
        inferPlan(session, ref, file, fromAll, maxColumns)
      );
      return plan.columns.map((c) => ({ name: c.name, type: c.type.sql }));
    },
    async stage(table, onConflict) {
      checkKeys();
      try {
        return await stageOnce(database, spoolDir, table, file, onConflict);
      } catch (error) {
        if (!(error instanceof MoreKeys)) throw error;
        file = error.complete(file);
        checkKeys();
        return await stageOnce(database, spoolDir, table, file, onConflict);
      }
    },
    async keyRows(table, key) {
      const shadow = await database.withSession((session) => shadowTable(session, table));
      const mapping = await mapRowKeys(database, shadow, file);
      const names = aliases(mapping);
      const positions = key.map((k) => mapping.findIndex((m) => m.column.name === k));
      if (positions.some((i) => i < 0)) return undefined;
      const values = positions.map((i) =>
        csvText(
          readAs(mapping[i]!.column.type).expression(names[i]!),
          parseType(mapping[i]!.column.type),
        )
      );
      const path = `${spoolDir}/${crypto.randomUUID()}.csv`;
      const typed = numbered(file, mapping, (m) => readAs(m.column.type).type);
      await database.withSession((session) =>
        session.run(
          `COPY (SELECT row_number_ - 1, ${values.join(", ")} FROM ${typed}) TO ${
            quoteLiteral(path)
          } (FORMAT csv, HEADER false, FORCE_QUOTE *)`,
          [file.path],
        )
      );
      return path;
    },
  };
}

async function stageOnce(
  database: Database,
  spoolDir: string,
  target: Table,
  file: RowsFile,
  onConflict: OnConflict,
): Promise<StagedRows> {
  const shadow = await database.withSession((session) => shadowTable(session, target));
  const mapping = await mapRowKeys(database, shadow, file);
  const mapped = new Set(mapping.map((m) => m.column.name));
  // Where the conflict key is among the rows' columns, PostgreSQL resolves conflicts, those
  // within the batch too, taking the rows in the order they were sent: staged without keys,
  // they keep that order (DuckDB's insert under ON CONFLICT does not).
  const resolving = onConflict !== "fail" && conflictKeyCovered(shadow, mapped);
  const staged: Table = {
    ...shadow,
    // A schema of its own per load, so that messages name the table as the client knows it.
    schema: `staging_${crypto.randomUUID().replaceAll("-", "")}`,
    columns: shadow.columns.filter((c) => mapped.has(c.name)).map((c) => ({ ...c, default: null })),
    constraints: resolving ? { primary_key: null, unique: [], foreign_keys: [] } : {
      primary_key: covered(shadow.constraints.primary_key, mapped),
      unique: shadow.constraints.unique.filter((k) => covered(k, mapped)),
      foreign_keys: [],
    },
  };
  const path = `${spoolDir}/${crypto.randomUUID()}.csv`;
  return await database.withSession(async (session) => {
    await session.run(`CREATE SCHEMA ${quoteIdent(staged.schema)}`);
    try {
      await session.run(createStaging(staged));
      const otherKeys = file.keysComplete ? Promise.resolve([]) : keysOutside(database, file);
      otherKeys.catch(() => {});
      try {
        // The staged table starts empty: what a count would tell, the copy out tells.
        if (mapping.length === 0 || file.rows === 0) {
          await loadRows(session, staged, file, mapping, "fail");
        } else await insertRows(session, staged, file, mapping);
      } catch (error) {
        if (error instanceof ApiError) throw error;
        const explained = await explainLoadFailure(session, staged, file, mapping, error, false);
        throw targetTypeNames(explained, shadow, target);
      }
      const found = await otherKeys;
      if (found.length > 0) throw new MoreKeys(found);
      const columns = staged.columns;
      const select = columns.length === 0
        ? "SELECT 1"
        : `SELECT ${columns.map((c) => csvText(quoteIdent(c.name), parseType(c.type))).join(", ")}`;
      const rows = await session.changes(
        `COPY (${select} FROM ${qualified(staged.schema, staged.name)}) TO ${
          quoteLiteral(path)
        } (FORMAT csv, HEADER false, FORCE_QUOTE *)`,
      );
      return {
        columns: columns.map((c) => c.name),
        path,
        rows,
        sent: file.rows < 0 ? rows : file.rows,
      };
    } finally {
      await session.run(`DROP SCHEMA ${quoteIdent(staged.schema)} CASCADE`).catch(() => {});
    }
  });
}

/**
 * `error` with the types its messages name as the target names them: a value "is not a
 * valid" type, DuckDB's name for it.
 */
function targetTypeNames(error: ApiError, shadow: Table, target: Table): ApiError {
  const named = (message: string, column?: string) => {
    const i = shadow.columns.findIndex((c) => c.name === column);
    if (i < 0) return message;
    return message.replace(
      ` is not a valid ${shadow.columns[i]!.type}`,
      ` is not a valid ${target.columns[i]!.type}`,
    );
  };
  if (!error.details || error.details.length === 0) return error;
  const details = error.details.map((d) => ({ ...d, message: named(d.message, d.column) }));
  const first = error.details[0]!;
  const message = error.message.replace(first.message, details[0]!.message);
  return new ApiError(error.status, error.type, message, { details });
}

/** `key` when every one of its columns is among the rows' columns. */
function covered<K extends { readonly columns: readonly string[] }>(
  key: K | null,
  mapped: ReadonlySet<string>,
): K | null {
  return key && key.columns.every((c) => mapped.has(c)) ? key : null;
}

/** Whether the key `skip` and `update` resolve on is wholly among the rows' columns. */
function conflictKeyCovered(table: Table, mapped: ReadonlySet<string>): boolean {
  const { primary_key, unique } = table.constraints;
  const key = primary_key ?? (unique.length === 1 ? unique[0]! : null);
  return covered(key, mapped) !== null;
}

/**
 * The target table with each column's type as DuckDB reads it. The types not yet known are
 * asked in one statement, as ddl.ts's canonicalTypes asks, and kept: a load then asks none.
 */
async function shadowTable(session: Session, target: Table): Promise<Table> {
  // This table's types, taken now: the kept ones may be dropped while the others are asked.
  const readAs = new Map<string, string | undefined>(
    target.columns.map((c) => [c.type, READ_AS.get(c.type)]),
  );
  const unknown = [...readAs].filter(([, known]) => known === undefined).map(([type]) => type);
  if (unknown.length > 0) {
    const [row] = await session.rows(
      `SELECT ${unknown.map((t, i) => `typeof(CAST(NULL AS ${stagingType(t)})) AS t${i}`)}`,
    );
    if (READ_AS.size + unknown.length > READ_AS_MOST) READ_AS.clear();
    unknown.forEach((type, i) => {
      readAs.set(type, String(row![`t${i}`]));
      READ_AS.set(type, String(row![`t${i}`]));
    });
  }
  const columns: Column[] = target.columns.map((c) => ({ ...c, type: readAs.get(c.type)! }));
  return { ...target, columns };
}

/** Target types (as the target names them) and DuckDB's name of each as staged. */
const READ_AS = new Map<string, string>();
/**
 * Types kept at most, all dropped when more are asked: more than tables use, however many
 * `varchar(n)` there are (exported for a test).
 */
export const READ_AS_MOST = 1_000;

/**
 * The DuckDB type a target column's values are read and checked as. Where DuckDB holds less
 * than the target (an unlimited or wide `numeric`, bit strings, a fixed-length `character`),
 * the value is staged as text and the target checks it.
 */
export function stagingType(type: string): string {
  const array = type.endsWith("[]");
  const scalar = array ? type.slice(0, -2) : type;
  const lower = scalar.toLowerCase();
  let staged: string;
  const numeric = /^numeric\((\d+),(\d+)\)$/.exec(lower);
  if (numeric) {
    staged = Number(numeric[1]) <= 38 && Number(numeric[2]) <= Number(numeric[1])
      ? `DECIMAL(${numeric[1]},${numeric[2]})`
      : "VARCHAR";
  } else if (/^(numeric|bit|bit varying|bpchar|character|xml)\b/.test(lower)) {
    staged = "VARCHAR";
  } else if (lower === "jsonb" || lower === "json") staged = "JSON";
  else if (/^(timestamp|time|interval)\(\d\)/.test(lower)) staged = lower.replace(/\(\d\)/, "");
  else if (/^interval /.test(lower)) staged = "INTERVAL";
  else if (/^[a-z ]+(\(\d+\))?$/.test(lower)) staged = lower;
  else staged = "VARCHAR";
  return array ? `${staged}[]` : staged;
}

function createStaging(table: Table): string {
  const lines = table.columns.map((c) =>
    `${quoteIdent(c.name)} ${c.type}${c.is_nullable ? "" : " NOT NULL"}`
  );
  const { primary_key, unique } = table.constraints;
  if (primary_key) lines.push(`PRIMARY KEY (${primary_key.columns.map(quoteIdent).join(", ")})`);
  for (const key of unique) lines.push(`UNIQUE (${key.columns.map(quoteIdent).join(", ")})`);
  // A table needs a column; rows without keys stage none.
  if (lines.length === 0) lines.push(`${quoteIdent("\u0001empty")} INTEGER`);
  return `CREATE TABLE ${qualified(table.schema, table.name)} (${lines.join(", ")})`;
}

/** `value` (of DuckDB type `type`) as the text PostgreSQL's input reads, never NULL for a value. */
function csvText(value: string, type: NestedType): string {
  if (type.kind === "list") {
    // An array literal: each element quoted and escaped, a null element unquoted NULL.
    const x = `x${value.length}`;
    const element = csvText(x, type.element);
    return `CASE WHEN ${value} IS NULL THEN NULL ELSE '{' || array_to_string(list_transform(${value}, lambda ${x}: CASE WHEN ${x} IS NULL THEN 'NULL' ELSE '"' || replace(replace(${element}, '\\', '\\\\'), '"', '\\"') || '"' END), ',') || '}' END`;
  }
  if (type.kind !== "scalar") return `CAST(to_json(${value}) AS VARCHAR)`;
  if (type.name === "BLOB") return `'\\x' || hex(${value})`;
  return `CAST(${value} AS VARCHAR)`;
}
