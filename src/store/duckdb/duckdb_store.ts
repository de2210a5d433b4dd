/**
 * The DuckDB implementation of {@link Store}: it opens the database and holds what the
 * operations share; each operation lives in the file of its job (schemas.ts, tables.ts,
 * update.ts, inserts.ts, uploads.ts, record_reads.ts, record_changes.ts, templates.ts,
 * health.ts).
 *
 * @module
 */

import { copyDatabase } from "./backup.ts";
import { MAX_COLUMNS } from "../../catalog/definition.ts";
import type { Logger } from "../../log.ts";
import type {
  AnswerStore,
  HealthStore,
  QueryStore,
  RecordStore,
  Store,
  TableStore,
} from "../store.ts";
import { noted } from "./context.ts";
import { Database, type DatabaseOptions, type Session } from "./database.ts";
import { Descriptions } from "./descriptions.ts";
import * as health from "./health.ts";
import { findAnswer, keepAnswers, KeptKeys, takeAnswer } from "./idempotency.ts";
import { forgetAnswers } from "../shared/kept_answers.ts";
import { insertRecords, insertWhole } from "./inserts.ts";
import { LockSet } from "./locks.ts";
import { PageCache } from "./page_cache.ts";
import { bootstrap, META } from "./metadata.ts";
import { duckdbRecordChanges } from "./record_changes.ts";
import { recordChangesOn } from "../shared/record_changes.ts";
import { exportRecords, readRecords } from "./record_reads.ts";
import { readQuery, streamQuery } from "./queries.ts";
import { openWireSession } from "./wire_session.ts";
import { wireColumns } from "./wire_values.ts";
import { readCatalogSnapshot } from "../shared/wire_catalog.ts";
import { summarizeRecords } from "./record_summary.ts";
import { CoreStore } from "../shared/core_store.ts";
import { duckdbCore } from "./core.ts";
import { smallInserts } from "./small_inserts.ts";
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
 * assert.deepEqual(await store.schemas.list(), ["public"]);
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
  readonly tables: TableStore;
  readonly records: RecordStore;
  readonly queries: QueryStore;
  readonly answers: AnswerStore;
  readonly health: HealthStore;

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
    const grouped = smallInserts(
      context,
      async (m) => insertWhole(context, m.ref, await m.rows.whole(), "fail", m.keyed),
    );
    this.tables = {
      create: (plan, options) => tables.createTable(context, plan, options),
      // From the cache when nothing changed since it was read.
      get: (ref) => tables.getTable(context, ref),
      list: (options) => this.listTables(options),
      update: (ref, decide, keyed, dryRun) => updateTable(context, ref, decide, keyed, dryRun),
      drop: (ref, keyed) => tables.dropTable(context, ref, keyed),
      columnTypes: (plan) => tables.columnTypes(context, plan),
    };
    this.records = {
      insert: (ref, rows, onConflict, keyed) =>
        insertRecords(context, grouped, ref, rows, onConflict, keyed),
      upload: (ref, rows, options) => uploadTable(context, ref, rows, options),
      uploadCsv: (ref, csv, options) => uploadCsv(context, ref, csv, options),
      ...recordChangesOn(duckdbRecordChanges(context)),
      read: (ref, offset, limit, query) => readRecords(context, ref, offset, limit, query),
      summarize: (ref, filters, select, options) =>
        summarizeRecords(context, ref, filters, select, options),
      export: (ref, format, read) => exportRecords(context, ref, format, read),
    };
    this.queries = {
      read: (request, limit) => readQuery(context, request, limit),
      stream: (request, format) => streamQuery(context, request, format),
      session: (options) =>
        openWireSession(
          context,
          options?.single ?? false,
          (request) =>
            readCatalogSnapshot(this, request, (type) => wireColumns([{ name: "", type }])[0]!),
        ),
    };
    this.answers = {
      async find(scope, key, since) {
        if (!context.kept.mayHave(scope, key, since)) return undefined;
        return await database.withSession((session) => findAnswer(session, scope, key, since));
      },
      keep(keyed, result) {
        noted(context, keyed);
        return database.transaction((session) => keepAnswers(session, [{ keyed, result }]));
      },
      async forget(before) {
        await database.withSession((session) => forgetAnswers(session, META, before));
        context.kept.forget(before);
      },
      take: (scope, key, since) => takeAnswer(database, scope, key, since),
    };
    this.health = {
      ready: () => health.ready(database),
      healthy: () => database.usable(),
      openTransactions: () => database.openTransactions,
      // DuckDB's tags of `duckdb_memory()`.
      memoryByUse: () => health.memoryByUse(database),
    };
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
