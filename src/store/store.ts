/**
 * What the service asks of its storage, independent of the engine behind it.
 *
 * @module
 */

import type { EngineLimits, TablePlan } from "../catalog/definition.ts";
import type { Filter, ReadQuery } from "../catalog/filters.ts";
import type { Table, TableRef } from "../catalog/model.ts";
import type { TableUpdate } from "../catalog/update.ts";
import type {
  StoredTemplate,
  Template,
  TemplateDefinition,
  TemplateOrder,
  Version,
} from "../catalog/templates.ts";
import type { Compatibility } from "../catalog/compatibility.ts";
import type { IfExists } from "../catalog/uploads.ts";
import type { RecordsSummary, SummaryOptions } from "./summaries.ts";
import type { WireSession } from "./wire.ts";
import type { ArrivingRows, CsvSource, RowsSource } from "./sources.ts";

export {
  type ColumnSummary,
  type HistogramBin,
  MAX_BINS,
  MAX_TOP,
  type RecordsSummary,
  type SummaryOptions,
  type TopValue,
} from "./summaries.ts";
export type { WireColumn, WireRows, WireSession } from "./wire.ts";
export type { ArrivingRows, ByteSource, CsvSource, RowsPart, RowsSource } from "./sources.ts";

/**
 * What to do with rows whose key already exists. Kept here, not beside the store that uses
 * it, so that importing it loads no engine code (the load command imports it).
 */
export const ON_CONFLICT = ["fail", "skip", "update"] as const;
/** One of {@link ON_CONFLICT}. */
export type OnConflict = typeof ON_CONFLICT[number];

/** The formats a query's result or a table's records are streamed in. */
export const RESULT_FORMATS = ["csv", "ndjson", "json", "parquet"] as const;
/** One of {@link RESULT_FORMATS}. */
export type ResultFormat = typeof RESULT_FORMATS[number];

/** A column of a result: its name, and its type as the engine names it. */
export interface ResultColumn {
  readonly name: string;
  readonly type: string;
}

/**
 * A query's parameter: a JSON scalar; an integer beyond ±2^53−1 as a `bigint`, with every digit
 * it was sent with.
 */
export type QueryParam = string | number | bigint | boolean | null;

/** A client's read-only query, for {@link Store.readQuery} and {@link Store.streamQuery}. */
export interface QueryRequest {
  /** One SELECT; its `$1`/`?` parameters bound to `params` in order. */
  readonly sql: string;
  readonly params: readonly QueryParam[];
  /** Where an unqualified table name is looked for. */
  readonly defaultSchema: string;
  /** The schemas the token may read; all when absent. */
  readonly visibleSchemas?: readonly string[];
  /** Interrupted this long after it began (408). */
  readonly timeoutMs: number;
  /**
   * Who asks over the PostgreSQL protocol, for the catalog it is shown, and the session's
   * settings by lower-case name, as `SHOW` answers them (`current_setting`, `pg_settings`).
   */
  readonly client?: {
    readonly user: string;
    readonly database: string;
    readonly settings?: Readonly<Record<string, string>>;
  };
}

/** At most a limit of a query's rows, as JSON array text. */
export interface QueryPage {
  readonly columns: readonly ResultColumn[];
  /** The rows as a JSON array of objects, rendered as record pages are. */
  readonly json: string;
  /** Whether rows past the limit were left out. */
  readonly truncated: boolean;
}

/** Counts of a load. */
export interface LoadCounts {
  readonly inserted: number;
  readonly skipped?: number;
  readonly updated?: number;
}

/**
 * A column's new value in a change of records: the key the request named it by, and the
 * value as the request's JSON text (cast to the column's type as an inserted value is).
 */
export interface ColumnChange {
  readonly key: string;
  readonly json: string;
}

/**
 * Which rows a change of records applies to, chosen for the table as the change finds it
 * (under its locks): every row that all the filters keep; every row when there are none.
 */
export type RowChoice = (table: Table) => readonly Filter[];

/** How an update was carried out: not at all, in place, or by rebuilding the table. */
export type UpdateHow = "unchanged" | "altered" | "rebuilt";

/** How an upload goes about an existing table, from what definition, under what key. */
export interface UploadOptions {
  readonly plan?: TablePlan;
  readonly ifExists: IfExists;
  readonly keyed?: KeyedWrite<{ table: Table; inserted: number }>;
  /**
   * Load as the upload would, then roll everything back: the answer carries the first rows
   * as stored (`preview`) and nothing is written.
   */
  readonly dryRun?: boolean;
}

/** Rows of a table a dry run shows, read in its transaction before the rollback. */
export const PREVIEW_ROWS = 100;

/** What an upload did, or with `dryRun` would do. */
export interface UploadResult {
  readonly table: Table;
  readonly inserted: number;
  /** With `dryRun`: the first rows as the table would hold them, as JSON array text. */
  readonly preview?: string;
}

/** Options of a table listing. */
export interface ListTablesOptions {
  /** Only this schema; absent for all. */
  readonly schema?: string;
  /** When set, only these schemas are visible (the token's `schemas` claim). */
  readonly visibleSchemas?: readonly string[];
  readonly offset: number;
  readonly limit: number;
  readonly verbose: boolean;
}

/** A listed table with the estimate of its rows from the engine's statistics. */
export type ListedTable = (TableRef | Table) & { readonly rows_estimate: number };

/** One page of a table listing, with the count of all matches. */
export interface TableListing {
  readonly tables: readonly ListedTable[];
  readonly total: number;
}

/** Options of a template listing. */
export interface ListTemplatesOptions {
  /** Only templates whose name contains this, in any case. */
  readonly search?: string;
  readonly orderBy: TemplateOrder;
  /** Only each template's latest version. */
  readonly latest: boolean;
}

/** A template version to store. */
export interface NewTemplate {
  readonly name: string;
  readonly version: Version;
  readonly compatibility: Compatibility;
  readonly definition: TemplateDefinition;
  /** The definition's column types, from {@link Store.columnTypes}. */
  readonly types: readonly string[];
}

/** A write's answer as kept for its `Idempotency-Key`: what a retry is answered. */
export interface StoredAnswer {
  readonly status: number;
  /** The JSON body. */
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** An answer found for a key, with the fingerprint of the request that earned it. */
export interface KeptAnswer {
  readonly fingerprint: string;
  readonly answer: StoredAnswer;
}

/**
 * A write that carries an `Idempotency-Key`: the store keeps its answer in the write's own
 * transaction, so the key is kept exactly when the write committed.
 */
export interface KeyedWrite<R> {
  /** Who sent it and where: the token's subject, the method and the path. */
  readonly scope: string;
  readonly key: string;
  /** SHA-256 of the query and body, hex; asked for once the body has been read whole. */
  fingerprint(): string;
  /** The answer to keep (and give) for the write's result. */
  answer(result: R): StoredAnswer;
  /** When the request arrived, in milliseconds since the epoch. */
  readonly at: number;
  /** Answers kept before this time (milliseconds since the epoch) are forgotten. */
  readonly since: number;
}

/** Everything but the page bounds of a records read. */
export interface RecordsQuery {
  /** Columns, filters, order and whether to count, as `parseReadQuery` gives them. */
  readonly read: ReadQuery;
  /**
   * A cursor of a previous page: the page starts after its row, and the answer carries the
   * next cursor. Empty for the first page of such a walk; absent for no cursors.
   */
  readonly after?: string;
}

/**
 * A records read chosen for the table as the read finds it (its description under the read's
 * locks, as a {@link RowChoice} is): the read grammar parsed against its columns.
 */
export type RecordsChoice = (table: Table) => RecordsQuery;

/** A page of records as JSON array text, with the count and the next page's cursor. */
export interface RecordsPage {
  readonly json: string;
  /** The number of records the filters let through; absent when the read asked for no count. */
  readonly total?: number;
  /** With `count=estimated`: whether `total` is an estimate (else it was counted). */
  readonly estimated?: boolean;
  /** With a cursor asked for: the next page's, or null after the last row. */
  readonly next?: string | null;
}

/** Schemas: listed, created, dropped, their stored spelling. */
export interface SchemaStore {
  /** Schema names in order, without internal ones, filtered to `visible` when given. */
  list(visible?: readonly string[]): Promise<string[]>;
  /** Creates a schema; 409 when it exists. Returns the stored name. */
  create(name: string, keyed?: KeyedWrite<string>): Promise<string>;
  /** Drops a schema; 409 when it holds tables and `cascade` is false. */
  drop(name: string, cascade: boolean, keyed?: KeyedWrite<string>): Promise<string>;
  /** The stored spelling of an existing schema's name; 404 when there is none. */
  resolve(name: string): Promise<string>;
}

/** Table definitions: created, described, listed, updated, dropped. */
export interface TableStore {
  /** Creates a table from a checked plan; with `ifNotExists` an existing table is returned. */
  create(
    plan: TablePlan,
    options: {
      readonly ifNotExists: boolean;
      readonly keyed?: KeyedWrite<{ readonly table: Table; readonly created: boolean }>;
    },
  ): Promise<{ readonly table: Table; readonly created: boolean }>;
  /** One table; 404 when the schema or the table does not exist. */
  get(ref: TableRef): Promise<Table>;
  /** A page of tables in schema, then name, order. */
  list(options: ListTablesOptions): Promise<TableListing>;
  /**
   * Updates a table to the wanted definition `decide` gives for the table as it is, in one
   * transaction, keeping its rows and column ids; 404 when it does not exist. With `dryRun`
   * the update is carried out and rolled back: the answer is the table as it would be.
   */
  update(
    ref: TableRef,
    decide: (current: Table) => TableUpdate,
    keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
    dryRun?: boolean,
  ): Promise<{ table: Table; how: UpdateHow }>;
  /** Drops a table; 409 when another table's foreign key references it. */
  drop(ref: TableRef, keyed?: KeyedWrite<TableRef>): Promise<TableRef>;
  /**
   * The canonical types of a plan's columns, in order; 422 when a type is unknown or a
   * default is not one scalar expression of its column's type.
   */
  columnTypes(plan: TablePlan): Promise<string[]>;
}

/** The rows of tables: loaded, changed, read, summarised, exported. */
export interface RecordStore {
  /**
   * Inserts arriving rows into an existing table, in one transaction; with
   * `on_conflict=fail` loading may start before the last row has arrived.
   */
  insert(
    ref: TableRef,
    rows: ArrivingRows,
    onConflict: OnConflict,
    keyed?: KeyedWrite<{ table: Table } & LoadCounts>,
  ): Promise<{ table: Table } & LoadCounts>;
  /**
   * Creates (or replaces, or appends to) a table from `rows`, in one transaction; without a
   * plan the columns are inferred from the rows.
   */
  upload(
    ref: TableRef,
    rows: RowsSource,
    options: UploadOptions,
  ): Promise<UploadResult>;
  /**
   * {@link upload} from a CSV file: delimiter, quoting and, without a plan, the
   * columns' types detected; the first line with any text is the header.
   */
  uploadCsv(
    ref: TableRef,
    csv: CsvSource,
    options: UploadOptions,
  ): Promise<UploadResult>;
  /**
   * Sets the columns `changes` names to their values in the rows `where` chooses, in one
   * transaction: 422 for a key that names no column, a value its column cannot take or a
   * null in a NOT NULL column; 409 for a duplicate primary or unique key, or a foreign key
   * that the change would break either way (a value no referenced row has, or a change to
   * the key of a row others reference).
   */
  update(
    ref: TableRef,
    changes: readonly ColumnChange[],
    where: RowChoice,
    keyed?: KeyedWrite<{ table: Table; updated: number }>,
  ): Promise<{ table: Table; updated: number }>;
  /**
   * Deletes the rows `where` chooses, in one transaction; 409 when another table's foreign
   * key references one of them.
   */
  delete(
    ref: TableRef,
    where: RowChoice,
    keyed?: KeyedWrite<{ table: Table; deleted: number }>,
  ): Promise<{ table: Table; deleted: number }>;
  /**
   * One page of records as JSON array text and the count of all records; with `query`, the
   * columns, rows and order it asks for, the count of the rows its filters let through (unless
   * it asks for none) and, walking by cursor, the next cursor. 400 for a filter or cursor
   * value its column's type cannot take.
   */
  read(
    ref: TableRef,
    offset: number,
    limit: number,
    query?: RecordsQuery | RecordsChoice,
  ): Promise<RecordsPage>;
  /**
   * Per column of `select` (all by default), figures of the records `filters` let through,
   * with the histograms and top values `options` asks for; 400 for a filter value its
   * column's type cannot take.
   */
  summarize(
    ref: TableRef,
    filters: readonly Filter[],
    select?: readonly string[],
    options?: SummaryOptions,
  ): Promise<RecordsSummary>;
  /**
   * The table's records in `format` (CSV header first), streamed from a consistent snapshot:
   * those `read`'s filters let through, its `select`ed columns, in its order (record order
   * by default; Parquet without an order in storage order); its `limit` and `count` do not
   * apply.
   */
  export(
    ref: TableRef,
    format: ResultFormat,
    read?: ReadQuery,
  ): Promise<{ table: Table; stream: ReadableStream<Uint8Array> }>;
}

/** Clients' read-only SQL. */
export interface QueryStore {
  /**
   * A connection holding one read snapshot, for the PostgreSQL protocol's listener; with
   * `single`, for one statement only, which is one snapshot by itself, so the engine may begin
   * no transaction around it.
   */
  session(options?: { readonly single?: boolean }): Promise<WireSession>;
  /**
   * At most `limit` rows of a read-only query; 400 for anything but one query over readable
   * tables, 403 for a schema the token may not read, 408 past its deadline.
   */
  read(request: QueryRequest, limit: number): Promise<QueryPage>;
  /** The whole result of a read-only query in `format`, streamed; refused as {@link read}. */
  stream(
    request: QueryRequest,
    format: ResultFormat,
  ): Promise<{ columns: readonly ResultColumn[]; stream: ReadableStream<Uint8Array> }>;
}

/** Versioned table templates. */
export interface TemplateStore {
  /** Every version of a template (name in any case), newest first; empty when there is none. */
  versions(name: string): Promise<StoredTemplate[]>;
  /** Template versions in the requested order. */
  list(options: ListTemplatesOptions): Promise<Template[]>;
  /**
   * Stores a new version of a template unless `admit`, given the existing versions newest
   * first, throws; one version at a time per template name. A template that exists keeps
   * the spelling of its name.
   */
  add(
    template: NewTemplate,
    admit: (existing: readonly StoredTemplate[]) => void,
    keyed?: KeyedWrite<Template>,
  ): Promise<Template>;
  /** Deletes one version, or all; 404 when there is none. Returns the template's name. */
  drop(
    name: string,
    version?: Version | "latest",
    keyed?: KeyedWrite<string>,
  ): Promise<string>;
}

/** Answers kept for `Idempotency-Key`s. */
export interface AnswerStore {
  /** The answer kept for `key` in `scope` since `since` (ms since the epoch), if any. */
  find(scope: string, key: string, since: number): Promise<KeptAnswer | undefined>;
  /**
   * Keeps a keyed write's answer on its own, for a write that changed nothing (such as an
   * update to the definition a table already has).
   */
  keep<R>(keyed: KeyedWrite<R>, result: R): Promise<void>;
  /** Forgets the answers kept before `before` (ms since the epoch). */
  forget(before: number): Promise<void>;
  /**
   * Takes the answer kept for `key` in `scope` away and gives it, if it was kept at or after
   * `since`: of several takers at once, one gets it (a single-use download ticket).
   */
  take(scope: string, key: string, since: number): Promise<StoredAnswer | undefined>;
}

/** What `/readyz`, `/healthz` and `/metrics` ask of the database. */
export interface HealthStore {
  /** Is the database open and writable? */
  ready(): Promise<boolean>;
  /**
   * Can the database do work at all? False only when the engine failed and reopening it
   * fails too (this tries), so that restarting the process is the remedy left.
   */
  healthy(): Promise<boolean>;
  /** Database transactions open at this moment. */
  openTransactions(): number;
  /**
   * Bytes the database engine holds in memory at this moment by its own count, by what it
   * holds them for. Every use it can name is there, zeros included, so a series never
   * vanishes; the names are the engine's own and may change with it.
   */
  memoryByUse(): Promise<Map<string, number>>;
}

/**
 * The storage operations the routes use, grouped by resource as postgres-meta groups its
 * classes; the only place data lives.
 */
export interface Store extends EngineLimits {
  readonly schemas: SchemaStore;
  readonly tables: TableStore;
  readonly records: RecordStore;
  readonly queries: QueryStore;
  readonly templates: TemplateStore;
  readonly answers: AnswerStore;
  readonly health: HealthStore;
  /**
   * Interrupts the work under way and breaks off every export, each failing with `failure`:
   * the service is stopping, and what would run on past its grace must not hold it.
   */
  interrupt?(failure: Error): void;
  /**
   * Writes a consistent copy of the whole database into the new file `path`, in the backup
   * directory the engine was opened with, while work goes on: every commit before it began,
   * none after. Only an engine whose database is one file the service holds has it.
   */
  backup?(path: string): Promise<void>;
  /** Checkpoints and closes; waits for nothing, so stop taking requests first. */
  close(): Promise<void>;
}
