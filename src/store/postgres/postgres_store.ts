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

import { PG_MAX_COLUMNS, PG_MAX_NAME_BYTES } from "./ddl.ts";
import type { Logger } from "../../log.ts";
import type {
  AnswerStore,
  HealthStore,
  QueryStore,
  RecordStore,
  Store,
  TableStore,
} from "../store.ts";
import type { StoreContext } from "./context.ts";
import { KnownDescriptions } from "./descriptions.ts";
import { Database, type Session } from "./database.ts";
import * as health from "./health.ts";
import * as answers from "./idempotency.ts";
import { forgetAnswers } from "../shared/kept_answers.ts";
import { bootstrap, META } from "./metadata.ts";
import { openStaging } from "../duckdb/mod.ts";
import * as exports from "./exports.ts";
import * as queries from "./queries.ts";
import { openWireSession } from "./wire_session.ts";
import { postgresTypeOid, readCatalogSnapshot } from "../shared/wire_catalog.ts";
import { DEFAULT_READ_TIMEOUT_MS } from "./read_bounds.ts";
import { postgresRecordChanges } from "./record_changes.ts";
import { recordChangesOn } from "../shared/record_changes.ts";
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
    descriptions: new KnownDescriptions(),
  }, close);
}

/** Tables, schemas and their metadata in one PostgreSQL database. */
export class PostgresStore extends CoreStore<Session> implements Store {
  readonly maxColumns: number = PG_MAX_COLUMNS;
  readonly maxColumnNameBytes: number = PG_MAX_NAME_BYTES;
  readonly tables: TableStore;
  readonly records: RecordStore;
  readonly queries: QueryStore;
  readonly answers: AnswerStore;
  readonly health: HealthStore;
  readonly #database: Database;
  readonly #closeStaging: () => Promise<void>;

  constructor(context: StoreContext, closeStaging: () => Promise<void>) {
    super(postgresCore(context));
    const { database } = context;
    this.#database = database;
    this.#closeStaging = closeStaging;
    this.tables = {
      create: (plan, options) => tables.createTable(context, plan, options),
      get: (ref) => tables.getTable(context, ref),
      list: (options) => this.listTables(options),
      update: (ref, decide, keyed, dryRun) =>
        update.updateTable(context, ref, decide, keyed, dryRun),
      drop: (ref, keyed) => tables.dropTable(context, ref, keyed),
      columnTypes: (plan) => tables.columnTypes(context, plan),
    };
    this.records = {
      insert: (ref, rows, onConflict, keyed) =>
        records.insertRecords(context, ref, rows, onConflict, keyed),
      upload: (ref, rows, options) => uploads.uploadTable(context, ref, rows, options),
      uploadCsv: (ref, csv, options) => uploads.uploadCsv(context, ref, csv, options),
      ...recordChangesOn(postgresRecordChanges(context)),
      read: (ref, offset, limit, query) => reads.readRecords(context, ref, offset, limit, query),
      summarize: (ref, filters, select, options) =>
        summary.summarizeRecords(context, ref, filters, select, options),
      export: (ref, format, read) => exports.exportRecords(context, ref, format, read),
    };
    this.queries = {
      read: (request, limit) => queries.readQuery(context, request, limit),
      stream: (request, format) => queries.streamQuery(context, request, format),
      session: () =>
        openWireSession(context, (request) => readCatalogSnapshot(this, request, postgresTypeOid)),
    };
    this.answers = {
      find: (scope, key, since) =>
        database.withSession((s) => answers.findAnswer(s, scope, key, since)),
      keep: (keyed, result) =>
        database.transaction((s) => answers.keepAnswers(s, [{ keyed, result }])),
      forget: (before) => database.withSession((s) => forgetAnswers(s, META, before)),
      take: (scope, key, since) =>
        database.withSession((s) => answers.takeAnswer(s, scope, key, since)),
    };
    this.health = {
      ready: () => health.ready(database),
      healthy: () => database.usable(),
      openTransactions: () => database.openTransactions,
      memoryByUse: () => health.memoryByUse(database),
    };
  }

  async close(): Promise<void> {
    await this.#database.close();
    await this.#closeStaging();
  }
}
