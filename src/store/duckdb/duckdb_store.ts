/**
 * The DuckDB implementation of {@link Store}: it opens the database and holds what the
 * operations share; each operation lives in the file of its job (schemas.ts, tables.ts,
 * update.ts, inserts.ts, uploads.ts, record_reads.ts, record_changes.ts, templates.ts,
 * health.ts).
 *
 * @module
 */

import { copyDatabase } from "./backup.ts";
import { MAX_COLUMNS, type TablePlan } from "../../catalog/definition.ts";
import type { Filter, ReadQuery } from "../../catalog/filters.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import type { Logger } from "../../log.ts";
import type {
  ArrivingRows,
  ColumnChange,
  CsvSource,
  KeptAnswer,
  KeyedWrite,
  OnConflict,
  QueryPage,
  QueryRequest,
  RecordsPage,
  RecordsQuery,
  RecordsSummary,
  ResultColumn,
  ResultFormat,
  RowChoice,
  RowsSource,
  Store,
  UpdateHow,
  UploadOptions,
} from "../store.ts";
import { noted, type StoreContext } from "./context.ts";
import { Database, type DatabaseOptions, type Session } from "./database.ts";
import { Descriptions } from "./descriptions.ts";
import * as health from "./health.ts";
import { findAnswer, forgetAnswers, keepAnswer, KeptKeys } from "./idempotency.ts";
import { insertRecords, insertWhole } from "./inserts.ts";
import { LockSet } from "./locks.ts";
import { PageCache } from "./page_cache.ts";
import { bootstrap } from "./metadata.ts";
import { type Deleted, deleteRecords, type Updated, updateRecords } from "./record_changes.ts";
import { exportRecords, readRecords } from "./record_reads.ts";
import { readQuery, streamQuery } from "./queries.ts";
import { summarizeRecords } from "./record_summary.ts";
import { CoreStore } from "../shared/core_store.ts";
import { duckdbCore } from "./core.ts";
import { type Inserted, type SmallInserts, smallInserts } from "./small_inserts.ts";
import * as tables from "./tables.ts";
import { updateTable } from "./update.ts";
import { uploadCsv, uploadTable } from "./uploads.ts";

/**
 * Where the store keeps its files: the database file, the spool directory (the only one DuckDB
 * may read, so rows from anywhere else are spooled there by the store first), the spill
 * directory, and DuckDB's memory and block sizes; failures after a commit go to `logger`.
 */
export type StoreOptions = DatabaseOptions & {
  /**
   * How long a read of records (a page, a summary, an export until its first rows and
   * between them, the rows a change by filter chooses) may run before it is interrupted (408).
   */
  readonly readTimeoutMs?: number;
};

/**
 * Opens the DuckDB store: the hardened database, its metadata, and `public`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openStore } from "./duckdb_store.ts";
 *
 * const dir = await Deno.makeTempDir();
 * const store = await openStore({ path: `${dir}/t.duckdb`, spoolDir: dir, tempDir: dir });
 * assert.deepEqual(await store.listSchemas(), ["public"]);
 * await store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function openStore(options: StoreOptions): Promise<DuckDBStore> {
  const database = await Database.open(options);
  let kept;
  try {
    await database.withSession(bootstrap);
    kept = await database.withSession(KeptKeys.load);
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
  return new DuckDBStore(database, options.spoolDir, options.logger, kept, options.readTimeoutMs);
}

/** Tables, schemas and their metadata in one DuckDB file. */
export class DuckDBStore extends CoreStore<Session> implements Store {
  readonly maxColumns: number = MAX_COLUMNS;
  /** DuckDB keeps names of any length. */
  readonly maxColumnNameBytes: number = Number.POSITIVE_INFINITY;
  readonly #context: StoreContext;
  readonly #smallInserts: SmallInserts;

  /**
   * `spoolDir`: the directory DuckDB may read files from, for the store's own; `kept`: the
   * keys with answers kept in the file.
   */
  constructor(
    readonly database: Database,
    spoolDir: string,
    logger?: Logger,
    kept = new KeptKeys(),
    readTimeoutMs?: number,
  ) {
    const pages = new PageCache();
    const context = {
      database,
      spoolDir,
      logger,
      kept,
      // Every change takes its tables' locks: the pages hear of each from the lock set.
      locks: new LockSet((key, mode, taking) => pages.locked(key, mode, taking)),
      descriptions: new Descriptions(),
      pages,
      readTimeoutMs,
    };
    super(duckdbCore(context));
    this.#context = context;
    this.#smallInserts = smallInserts(
      context,
      async (m) => insertWhole(context, m.ref, await m.rows.whole(), "fail", m.keyed),
    );
  }

  createTable(
    plan: TablePlan,
    options: {
      readonly ifNotExists: boolean;
      readonly keyed?: KeyedWrite<{ table: Table; created: boolean }>;
    },
  ): Promise<{ table: Table; created: boolean }> {
    return tables.createTable(this.#context, plan, options);
  }

  /** The table's description, from the cache when nothing changed since it was read. */
  getTable(ref: TableRef): Promise<Table> {
    return tables.getTable(this.#context, ref);
  }

  updateTable(
    ref: TableRef,
    decide: (current: Table) => TableUpdate,
    keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  ): Promise<{ table: Table; how: UpdateHow }> {
    return updateTable(this.#context, ref, decide, keyed);
  }

  dropTable(ref: TableRef, keyed?: KeyedWrite<TableRef>): Promise<TableRef> {
    return tables.dropTable(this.#context, ref, keyed);
  }

  insertRecords(
    ref: TableRef,
    rows: ArrivingRows,
    onConflict: OnConflict,
    keyed?: KeyedWrite<Inserted>,
  ): Promise<Inserted> {
    return insertRecords(this.#context, this.#smallInserts, ref, rows, onConflict, keyed);
  }

  uploadTable(
    ref: TableRef,
    rows: RowsSource,
    options: UploadOptions,
  ): Promise<{ table: Table; inserted: number }> {
    return uploadTable(this.#context, ref, rows, options);
  }

  uploadCsv(
    ref: TableRef,
    csv: CsvSource,
    options: UploadOptions,
  ): Promise<{ table: Table; inserted: number }> {
    return uploadCsv(this.#context, ref, csv, options);
  }

  updateRecords(
    ref: TableRef,
    changes: readonly ColumnChange[],
    where: RowChoice,
    keyed?: KeyedWrite<Updated>,
  ): Promise<Updated> {
    return updateRecords(this.#context, ref, changes, where, keyed);
  }

  deleteRecords(ref: TableRef, where: RowChoice, keyed?: KeyedWrite<Deleted>): Promise<Deleted> {
    return deleteRecords(this.#context, ref, where, keyed);
  }

  readRecords(
    ref: TableRef,
    offset: number,
    limit: number,
    query?: RecordsQuery,
  ): Promise<RecordsPage> {
    return readRecords(this.#context, ref, offset, limit, query);
  }

  summarizeRecords(
    ref: TableRef,
    filters: readonly Filter[],
    select?: readonly string[],
  ): Promise<RecordsSummary> {
    return summarizeRecords(this.#context, ref, filters, select);
  }

  exportRecords(
    ref: TableRef,
    format: ResultFormat,
    read?: ReadQuery,
  ): Promise<{ table: Table; stream: ReadableStream<Uint8Array> }> {
    return exportRecords(this.#context, ref, format, read);
  }

  readQuery(request: QueryRequest, limit: number): Promise<QueryPage> {
    return readQuery(this.#context, request, limit);
  }

  streamQuery(
    request: QueryRequest,
    format: ResultFormat,
  ): Promise<{ columns: readonly ResultColumn[]; stream: ReadableStream<Uint8Array> }> {
    return streamQuery(this.#context, request, format);
  }

  columnTypes(plan: TablePlan): Promise<string[]> {
    return tables.columnTypes(this.#context, plan);
  }

  async keptAnswer(scope: string, key: string, since: number): Promise<KeptAnswer | undefined> {
    if (!this.#context.kept.mayHave(scope, key, since)) return undefined;
    return await this.database.withSession((session) => findAnswer(session, scope, key, since));
  }

  keepAnswer<R>(keyed: KeyedWrite<R>, result: R): Promise<void> {
    noted(this.#context, keyed);
    return this.database.transaction((session) => keepAnswer(session, keyed, result));
  }

  async forgetAnswers(before: number): Promise<void> {
    await this.database.withSession((session) => forgetAnswers(session, before));
    this.#context.kept.forget(before);
  }

  ready(): Promise<boolean> {
    return health.ready(this.database);
  }

  healthy(): Promise<boolean> {
    return this.database.usable();
  }

  openTransactions(): number {
    return this.database.openTransactions;
  }

  /** See {@link health.memoryByUse}: DuckDB's tags of `duckdb_memory()`. */
  memoryByUse(): Promise<Map<string, number>> {
    return health.memoryByUse(this.database);
  }

  interrupt(failure: Error): void {
    this.database.interrupt(failure);
  }

  backup(path: string): Promise<void> {
    return this.database.withSession((session) => copyDatabase(session, path));
  }

  close(): Promise<void> {
    return this.database.close();
  }
}
