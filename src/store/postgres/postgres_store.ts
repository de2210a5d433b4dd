/**
 * The PostgreSQL implementation of {@link Store}: it opens the database and holds what the
 * operations share; each operation lives in the file of its job (schemas.ts, tables.ts,
 * update.ts, records.ts, uploads.ts, record_reads.ts, record_changes.ts, record_summary.ts,
 * exports.ts, queries.ts, templates.ts, idempotency.ts, health.ts).
 *
 * Several instances of the service may share one database: every change takes advisory
 * locks in its own transaction (locks.ts), and nothing read from the database is kept
 * across requests.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import { PG_MAX_COLUMNS, PG_MAX_NAME_BYTES } from "./ddl.ts";
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
  LoadCounts,
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
import type { StoreContext } from "./context.ts";
import { Database, type Session } from "./database.ts";
import * as health from "./health.ts";
import * as answers from "./idempotency.ts";
import { bootstrap } from "./metadata.ts";
import { openStaging } from "../duckdb/mod.ts";
import * as exports from "./exports.ts";
import * as queries from "./queries.ts";
import { DEFAULT_READ_TIMEOUT_MS } from "./read_bounds.ts";
import * as recordChanges from "./record_changes.ts";
import * as reads from "./record_reads.ts";
import * as summary from "./record_summary.ts";
import * as records from "./records.ts";
import { CoreStore } from "../shared/core_store.ts";
import { postgresCore } from "./core.ts";
import * as tables from "./tables.ts";
import * as update from "./update.ts";
import * as uploads from "./uploads.ts";

/** How to reach the database, and where to report an idle connection that fails. */
export interface PostgresStoreOptions {
  /** A `postgres://` or `postgresql://` URL (`DATABASE_URL`). */
  readonly url: string;
  /** Most connections the store holds at once; 10 unless told. */
  readonly maxConnections?: number;
  readonly logger?: Logger;
  /**
   * The directory request bodies are spooled to, where loads stage their rows and results are
   * written as Parquet; a temporary one of the store's own when absent.
   */
  readonly spoolDir?: string;
  /**
   * How long each statement of a read of records (a page, a summary, an export until its
   * first rows and between batches, the rows a change by filter chooses) may run before it is
   * cancelled (408): `QUERY_TIMEOUT_SECONDS`, as the DuckDB store takes it;
   * {@link DEFAULT_READ_TIMEOUT_MS} unless told. A query brings its own.
   */
  readonly readTimeoutMs?: number;
}

/**
 * Opens the PostgreSQL store: the pool, and the metadata schema and `public`, created when
 * missing (safe while another instance does the same).
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const database = await Database.open(options);
  const ownDir = options.spoolDir === undefined
    ? await Deno.realPath(await Deno.makeTempDir({ prefix: "pg-staging-" }))
    : undefined;
  const spoolDir = options.spoolDir ?? ownDir!;
  let staging;
  try {
    await database.transaction(bootstrap);
    staging = await openStaging({ spoolDir, tempDir: spoolDir, maxColumns: PG_MAX_COLUMNS });
  } catch (error) {
    await database.close().catch(() => {});
    if (ownDir) await Deno.remove(ownDir, { recursive: true }).catch(() => {});
    throw error;
  }
  const close = async () => {
    await staging.close();
    if (ownDir) await Deno.remove(ownDir, { recursive: true }).catch(() => {});
  };
  return new PostgresStore({
    database,
    staging,
    spoolDir,
    readTimeoutMs: options.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS,
  }, close);
}

/** Tables, schemas and their metadata in one PostgreSQL database. */
export class PostgresStore extends CoreStore<Session> implements Store {
  readonly maxColumns: number = PG_MAX_COLUMNS;
  readonly maxColumnNameBytes: number = PG_MAX_NAME_BYTES;
  readonly #context: StoreContext;

  readonly #closeStaging: () => Promise<void>;

  constructor(context: StoreContext, closeStaging: () => Promise<void>) {
    super(postgresCore(context));
    this.#context = context;
    this.#closeStaging = closeStaging;
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

  getTable(ref: TableRef): Promise<Table> {
    return tables.getTable(this.#context, ref);
  }

  updateTable(
    ref: TableRef,
    decide: (current: Table) => TableUpdate,
    keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  ): Promise<{ table: Table; how: UpdateHow }> {
    return update.updateTable(this.#context, ref, decide, keyed);
  }

  dropTable(ref: TableRef, keyed?: KeyedWrite<TableRef>): Promise<TableRef> {
    return tables.dropTable(this.#context, ref, keyed);
  }

  insertRecords(
    ref: TableRef,
    rows: ArrivingRows,
    onConflict: OnConflict,
    keyed?: KeyedWrite<{ table: Table } & LoadCounts>,
  ): Promise<{ table: Table } & LoadCounts> {
    return records.insertRecords(this.#context, ref, rows, onConflict, keyed);
  }

  uploadTable(
    ref: TableRef,
    rows: RowsSource,
    options: UploadOptions,
  ): Promise<{ table: Table; inserted: number }> {
    return uploads.uploadTable(this.#context, ref, rows, options);
  }

  uploadCsv(
    ref: TableRef,
    csv: CsvSource,
    options: UploadOptions,
  ): Promise<{ table: Table; inserted: number }> {
    return uploads.uploadCsv(this.#context, ref, csv, options);
  }

  updateRecords(
    ref: TableRef,
    changes: readonly ColumnChange[],
    where: RowChoice,
    keyed?: KeyedWrite<{ table: Table; updated: number }>,
  ): Promise<{ table: Table; updated: number }> {
    return recordChanges.updateRecords(this.#context, ref, changes, where, keyed);
  }

  deleteRecords(
    ref: TableRef,
    where: RowChoice,
    keyed?: KeyedWrite<{ table: Table; deleted: number }>,
  ): Promise<{ table: Table; deleted: number }> {
    return recordChanges.deleteRecords(this.#context, ref, where, keyed);
  }

  readRecords(
    ref: TableRef,
    offset: number,
    limit: number,
    query?: RecordsQuery,
  ): Promise<RecordsPage> {
    return reads.readRecords(this.#context, ref, offset, limit, query);
  }

  summarizeRecords(
    ref: TableRef,
    filters: readonly Filter[],
    select?: readonly string[],
  ): Promise<RecordsSummary> {
    return summary.summarizeRecords(this.#context, ref, filters, select);
  }

  exportRecords(
    ref: TableRef,
    format: ResultFormat,
    read?: ReadQuery,
  ): Promise<{ table: Table; stream: ReadableStream<Uint8Array> }> {
    return exports.exportRecords(this.#context, ref, format, read);
  }

  readQuery(request: QueryRequest, limit: number): Promise<QueryPage> {
    return queries.readQuery(this.#context, request, limit);
  }

  streamQuery(request: QueryRequest, format: ResultFormat): Promise<
    { columns: readonly ResultColumn[]; stream: ReadableStream<Uint8Array> }
  > {
    return queries.streamQuery(this.#context, request, format);
  }

  columnTypes(plan: TablePlan): Promise<string[]> {
    return tables.columnTypes(this.#context, plan);
  }

  keptAnswer(scope: string, key: string, since: number): Promise<KeptAnswer | undefined> {
    return this.#context.database.withSession((s) => answers.findAnswer(s, scope, key, since));
  }

  keepAnswer<R>(keyed: KeyedWrite<R>, result: R): Promise<void> {
    return this.#context.database.transaction((s) => answers.keepAnswer(s, keyed, result));
  }

  forgetAnswers(before: number): Promise<void> {
    return this.#context.database.withSession((s) => answers.forgetAnswers(s, before));
  }

  ready(): Promise<boolean> {
    return health.ready(this.#context.database);
  }

  healthy(): Promise<boolean> {
    return this.#context.database.usable();
  }

  openTransactions(): number {
    return this.#context.database.openTransactions;
  }

  /** See {@link health.memoryByUse}. */
  memoryByUse(): Promise<Map<string, number>> {
    return health.memoryByUse(this.#context.database);
  }

  async close(): Promise<void> {
    await this.#context.database.close();
    await this.#closeStaging();
  }
}
