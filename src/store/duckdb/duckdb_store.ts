/**
 * The DuckDB implementation of {@link Store}.
 *
 * @module
 */

import type { PlannedColumn, TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { DEFAULT_SCHEMA, nameKey } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { buildTable, canonicalTypes, checkColumns } from "./ddl.ts";
import {
  pickVersions,
  type StoredTemplate,
  type Template,
  type Version,
} from "../../catalog/templates.ts";
import { deleteTemplate, insertTemplate, listTemplates, templateVersions } from "./templates.ts";
import { applyUpdate } from "./update.ts";
import {
  analyseUpdate,
  changesAnything,
  dependentsInDropOrder,
  tablesTouched,
} from "./update_analysis.ts";
import { checkRows } from "./update_checks.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import { Database, type Session } from "./database.ts";
import { described, descriptionKey, Descriptions } from "./descriptions.ts";
import { GroupCommit } from "./group_commit.ts";
import { APPEND_BYTES, appendRows, plainRows } from "./append.ts";
import { findAnswer, forgetAnswers, keepAnswer, KeptKeys } from "./idempotency.ts";
import { type LockRequest, LockSet } from "./locks.ts";
import {
  allSchemas,
  bootstrap,
  findSchema,
  findTable,
  forgetTables,
  META,
  pageOfTables,
  tablesById,
  tablesInSchema,
} from "./metadata.ts";
import { referencedTableIds, referencingTables } from "./metadata_constraints.ts";
import { describeTables } from "./metadata_describe.ts";
import { quoteIdent } from "./sql.ts";
import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import { discard, type SpooledPart } from "../../ingest/spool.ts";
import { beforeDeadline } from "../../deadline.ts";
import type {
  ArrivingRows,
  KeptAnswer,
  KeyedWrite,
  ListTablesOptions,
  ListTemplatesOptions,
  NewTemplate,
  OnConflict,
  RowsFile,
  Store,
  TableListing,
  UpdateHow,
  UploadOptions,
} from "../store.ts";
import { appendParts, conflictKey, insertRows, type LoadCounts, loadRows } from "./rows.ts";
import { explainLoadFailure } from "./load_errors.ts";
import { describeCsv } from "./csv_layout.ts";
import { csvHeader, csvQuery, readRecords, readsInSlices } from "./record_reads.ts";
import { type KeyColumn, matchRowKeys } from "../../catalog/rows.ts";
import { keysOutside, mapRowKeys } from "./row_keys.ts";
import { checkSameColumns, inferPlan, MoreKeys } from "./inference.ts";
import { dropTableIn, existingSchema, existingTable, sameIds } from "./catalog_rows.ts";
import {
  appendLocks,
  heldBy,
  lockKeys,
  schemaLock,
  tableLock,
  templateLock,
} from "./store_locks.ts";
import {
  GROUP_BYTES,
  GROUP_GATHER_MS,
  GROUP_MEMBERS,
  type Inserted,
  keepGroupAnswers,
  type SmallInsert,
  writeLines,
} from "./small_inserts.ts";

/** Longest a load of a body still arriving waits for its next part (see nextPart). */
const PART_WAIT_MS = 2_000;

/** Where the store keeps its files. */
export interface StoreOptions {
  /** The database file. */
  readonly path: string;
  /** Absolute directory request bodies are spooled to; the only one DuckDB may read. */
  readonly spoolDir: string;
  /** Absolute directory for DuckDB's spill files. */
  readonly tempDir: string;
  /** DuckDB's memory limit in bytes. */
  readonly memoryBytes?: number;
  /** Block size of a database file created now (DuckDB's default when absent). */
  readonly blockBytes?: number;
  /** Where the store reports what fails after a change has committed. */
  readonly logger?: Logger;
}

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
  return new DuckDBStore(database, options.spoolDir, options.logger, kept);
}

/**
 * The next part of a body loaded while it arrives. The load holds its table's lock and a
 * transaction meanwhile, so a part that keeps it waiting past {@link PART_WAIT_MS} fails it:
 * the body is then loaded whole once it has all arrived, holding nothing until then, and a
 * client trickling its body cannot hold up DDL on the table.
 */
async function nextPart(parts: AsyncIterator<SpooledPart>): Promise<SpooledPart> {
  const next = parts.next();
  next.catch(() => {}); // Abandoned when late; the whole-body path meets the same failure.
  const late = () => new Error("The body's next part is late");
  return (await beforeDeadline(next, PART_WAIT_MS, late)).value;
}

/**
 * Rows a load must add or change for the store to checkpoint right after it: about one of
 * DuckDB's row groups (122,880 rows), the size from which DuckDB writes a load's rows to the
 * file as it goes rather than to its write-ahead log.
 */
export const CHECKPOINT_ROWS = 100_000;

/** Tables, schemas and their metadata in one DuckDB file. */
export class DuckDBStore implements Store {
  readonly #locks = new LockSet();
  readonly #descriptions = new Descriptions();
  readonly #smallInserts = new GroupCommit<SmallInsert, { table: Table } & LoadCounts>(
    (members) => this.#insertTogether(members),
    { members: GROUP_MEMBERS, size: GROUP_BYTES, gatherMs: GROUP_GATHER_MS },
    (member) => member.small.bytes.length,
  );

  /**
   * `spoolDir`: the directory DuckDB may read files from, for the store's own; `kept`: the
   * keys with answers kept in the file.
   */
  constructor(
    readonly database: Database,
    private readonly spoolDir: string,
    private readonly logger?: Logger,
    private readonly kept = new KeptKeys(),
  ) {}

  /** Notes a write's key before the write begins (see {@link KeptKeys}). */
  #noted<R>(keyed: KeyedWrite<R> | undefined): KeyedWrite<R> | undefined {
    if (keyed) this.kept.note(keyed.scope, keyed.key, keyed.at);
    return keyed;
  }

  listSchemas(visible?: readonly string[]): Promise<string[]> {
    const allowed = visible && new Set(visible.map(nameKey));
    return this.database.withSession(async (session) =>
      (await allSchemas(session)).filter((s) => !allowed || allowed.has(nameKey(s)))
    );
  }

  resolveSchema(name: string): Promise<string> {
    return this.database.withSession((session) => existingSchema(session, name));
  }

  createSchema(name: string, keyedWrite?: KeyedWrite<string>): Promise<string> {
    const keyed = this.#noted(keyedWrite);
    return this.#locks.run(
      [schemaLock(name, "exclusive")],
      () =>
        this.database.transaction(async (session) => {
          const existing = await findSchema(session, name);
          if (existing !== undefined) {
            throw ApiError.conflict(`Schema "${existing}" already exists`);
          }
          await session.run(`CREATE SCHEMA ${quoteIdent(name)}`);
          if (keyed) await keepAnswer(session, keyed, name);
          return name;
        }),
    );
  }

  dropSchema(name: string, cascade: boolean, keyedWrite?: KeyedWrite<string>): Promise<string> {
    const keyed = this.#noted(keyedWrite);
    if (nameKey(name) === DEFAULT_SCHEMA) {
      throw ApiError.conflict(`Schema "${DEFAULT_SCHEMA}" cannot be dropped`);
    }
    const locks = [schemaLock(name, "exclusive")];
    return this.#locks.run(
      locks,
      () =>
        this.#descriptions.changing(() =>
          this.database.transaction(async (session) => {
            const schema = await existingSchema(session, name);
            const tables = await tablesInSchema(session, schema);
            if (tables.length > 0 && !cascade) {
              throw ApiError.conflict(
                `Cannot drop schema "${schema}": it holds ${tables.length} table(s); use cascade=true`,
              );
            }
            const outside = await referencingTables(session, tables.map((t) => t.id));
            if (outside.length > 0) {
              const first = outside[0]!;
              throw ApiError.conflict(
                `Cannot drop schema "${schema}": foreign key "${first.constraint}" of table ` +
                  `"${first.schema}.${first.name}" references one of its tables`,
              );
            }
            await forgetTables(session, tables.map((t) => t.id));
            await session.run(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`);
            if (keyed) await keepAnswer(session, keyed, schema);
            return schema;
          }), { affects: heldBy(locks) }),
    );
  }

  async createTable(
    plan: TablePlan,
    options: {
      readonly ifNotExists: boolean;
      readonly keyed?: KeyedWrite<{ table: Table; created: boolean }>;
    },
  ): Promise<{ table: Table; created: boolean }> {
    this.#noted(options.keyed);
    const locks: LockRequest[] = [
      schemaLock(plan.ref.schema, "shared"),
      tableLock(plan.ref, "exclusive"),
      // DuckDB records a foreign key on the referenced table's catalog entry too.
      ...plan.foreignKeys.map((fk) => tableLock(fk.reference, "exclusive")),
    ];
    const defaults = await this.database.withSession((session) => checkColumns(session, plan));
    return await this.#locks.run(
      locks,
      () =>
        this.#descriptions.changing(() =>
          this.database.transaction(async (session) => {
            const schema = await existingSchema(session, plan.ref.schema);
            const existing = await findTable(session, { schema, name: plan.ref.name });
            let result;
            if (existing) {
              if (!options.ifNotExists) {
                throw ApiError.conflict(
                  `Table "${existing.schema}.${existing.name}" already exists`,
                );
              }
              result = { table: (await describeTables(session, [existing]))[0]!, created: false };
            } else {
              const at = { schema, name: plan.ref.name };
              result = { table: await buildTable(session, at, plan, defaults), created: true };
            }
            if (options.keyed) await keepAnswer(session, options.keyed, result);
            return result;
          }), { affects: heldBy(locks), leaves: (result) => [described(result.table)] }),
    );
  }

  /** The table's description, from the cache when nothing changed since it was read. */
  getTable(ref: TableRef): Promise<Table> {
    return this.#descriptions.get(descriptionKey(ref), () =>
      // One snapshot for the metadata and DuckDB's catalog: a concurrent drop cannot fall between.
      this.database.transaction(async (session) => {
        const row = await existingTable(session, ref);
        return (await describeTables(session, [row]))[0]!;
      }));
  }

  /**
   * The table's description as `session`'s open transaction sees it, from the cache when
   * that holds the same; `since` is the descriptions' stamp from before the transaction
   * began. 404 when the table is not there.
   */
  async #describeIn(session: Session, ref: TableRef, since: number): Promise<Table> {
    // DuckDB takes a transaction's snapshot at its first statement that reads the database,
    // not at BEGIN: this lookup is that statement, so the cache is consulted once it is fixed.
    const row = await existingTable(session, ref);
    return await this.#descriptions.get(
      descriptionKey(ref),
      async () => (await describeTables(session, [row]))[0]!,
      since,
    );
  }

  listTables(options: ListTablesOptions): Promise<TableListing> {
    return this.database.transaction(async (session) => {
      const schema = options.schema === undefined
        ? undefined
        : await existingSchema(session, options.schema);
      const page = await pageOfTables(
        session,
        { schema, visibleSchemas: options.visibleSchemas },
        options.offset,
        options.limit,
      );
      const tables = options.verbose
        ? await describeTables(session, page.rows)
        : page.rows.map((r) => ({ name: r.name, schema: r.schema }));
      return { tables, total: page.total };
    });
  }

  async updateTable(
    ref: TableRef,
    decide: (current: Table) => TableUpdate,
    keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  ): Promise<{ table: Table; how: UpdateHow }> {
    const updated = await this.#updateTable(ref, decide, this.#noted(keyed));
    // Nothing changed, so nothing else needs to commit with the key.
    if (keyed && updated.how === "unchanged") await this.keepAnswer(keyed, updated);
    // A rebuild copies every row, as a large load does.
    if (updated.how === "rebuilt") await this.#checkpoint("rebuild");
    return updated;
  }

  #updateTable(
    ref: TableRef,
    decide: (current: Table) => TableUpdate,
    keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
  ): Promise<{ table: Table; how: UpdateHow }> {
    // Read once to learn the locks, and again under them to check nothing moved.
    const plan = async (session: Session) => {
      const row = await existingTable(session, ref);
      const current = (await describeTables(session, [row]))[0]!;
      const update = decide(current);
      const dependents = await dependentsInDropOrder(session, row.id);
      const touched = lockKeys(row, await tablesTouched(session, row, dependents, update));
      return { row, current, update, dependents, touched };
    };
    let seen: number;
    return this.#underLookedUpLocks(
      ref,
      () =>
        this.database.transaction(async (session) => {
          const { row, touched } = await plan(session);
          seen = row.id;
          return touched;
        }),
      async (held) => {
        const prepared = await this.database.withSession(async (session) => {
          const { row, current, dependents, touched, ...planned } = await plan(session);
          let update = planned.update;
          if (row.id !== seen || touched.some((l) => !held.has(l.key))) return undefined;
          if (update.plan.ref.schema !== current.schema) {
            const schema = await existingSchema(session, update.plan.ref.schema);
            update = { ...update, plan: { ...update.plan, ref: { ...update.plan.ref, schema } } };
          }
          const other = await findTable(session, update.plan.ref);
          if (other && other.id !== row.id) {
            throw ApiError.conflict(`Table "${other.schema}.${other.name}" already exists`);
          }
          const analysis = await analyseUpdate(session, row, current, update, dependents);
          if (!changesAnything(analysis)) return { table: current, how: "unchanged" as const };
          await checkRows(session, analysis);
          return analysis;
        });
        if (prepared === undefined || "how" in prepared) return prepared;
        return await applyUpdate(this.database, prepared, keyed);
      },
      (updated) => updated.table,
    );
  }

  dropTable(ref: TableRef, keyedWrite?: KeyedWrite<TableRef>): Promise<TableRef> {
    const keyed = this.#noted(keyedWrite);
    // The tables this one references change too (DuckDB keeps the link on both sides), so
    // they are locked as well.
    let seen: { id: number; referenced: number[] };
    return this.#underLookedUpLocks(
      ref,
      () =>
        this.database.withSession(async (session) => {
          const row = await existingTable(session, ref);
          seen = { id: row.id, referenced: await referencedTableIds(session, row.id) };
          return [
            schemaLock(ref.schema, "shared"),
            tableLock(ref, "exclusive"),
            ...(await tablesById(session, seen.referenced)).map((r) => tableLock(r, "exclusive")),
          ];
        }),
      () =>
        this.database.transaction(async (session) => {
          const row = await existingTable(session, ref);
          const referenced = await referencedTableIds(session, row.id);
          if (row.id !== seen.id || !sameIds(referenced, seen.referenced)) return undefined;
          await dropTableIn(session, row);
          const dropped = { schema: row.schema, name: row.name };
          if (keyed) await keepAnswer(session, keyed, dropped);
          return dropped;
        }),
    );
  }

  /**
   * Runs `work`, a change to definitions, under locks only a look can tell: `look` gives
   * the locks to take, and `work`, holding them, answers undefined when what it finds now
   * needs other locks. Then all is tried again; a table that keeps changing is 409 after
   * four tries. Descriptions go uncached only while `work` runs, not while it waits.
   */
  async #underLookedUpLocks<T>(
    ref: TableRef,
    look: () => Promise<LockRequest[]>,
    work: (held: ReadonlySet<string>) => Promise<T | undefined>,
    leaves?: (result: T) => Table,
  ): Promise<T> {
    for (let attempt = 0;; attempt++) {
      const locks = await look();
      const held = new Set(locks.map((l) => l.key));
      const result = await this.#locks.run(
        locks,
        () =>
          this.#descriptions.changing(() => work(held), {
            affects: heldBy(locks),
            leaves: (result) => result === undefined || !leaves ? [] : [described(leaves(result))],
          }),
      );
      if (result !== undefined) return result;
      if (attempt >= 3) throw ApiError.conflict(`Table "${ref.name}" is changing; try again`);
    }
  }

  async insertRecords(
    ref: TableRef,
    rows: ArrivingRows,
    onConflict: OnConflict,
    keyed?: KeyedWrite<Inserted>,
  ): Promise<Inserted> {
    const loaded = await this.#insert(ref, rows, onConflict, this.#noted(keyed));
    await this.#checkpointAfterLoad(loaded.inserted + (loaded.updated ?? 0));
    return loaded;
  }

  async #insert(
    ref: TableRef,
    rows: ArrivingRows,
    onConflict: OnConflict,
    keyed: KeyedWrite<Inserted> | undefined,
  ): Promise<Inserted> {
    if (onConflict === "fail") {
      const early = await this.#insertWhileArriving(ref, rows, keyed);
      if (early) return early;
    }
    const small = onConflict === "fail" ? await rows.inMemory() : undefined;
    if (small && small.keysComplete && small.form === "objects" && small.rows > 0) {
      // Same table, same keys: one mapping, so one INSERT can take the whole group.
      const key = [ref.schema, ref.name, ...[...small.keys].sort()].join("\u0000");
      return await this.#smallInserts.submit(key, { ref, rows, small, keyed });
    }
    return await this.#insertWhole(ref, await rows.whole(), onConflict, keyed);
  }

  async #insertWhole(
    ref: TableRef,
    file: RowsFile,
    onConflict: OnConflict,
    keyed: KeyedWrite<Inserted> | undefined,
  ): Promise<Inserted> {
    try {
      return await this.#insertRecords(ref, file, onConflict, keyed);
    } catch (error) {
      if (!(error instanceof MoreKeys)) throw error;
      return await this.#insertRecords(ref, error.complete(file), onConflict, keyed);
    }
  }

  /**
   * Inserts small bodies of rows with the same keys into the same table in one transaction:
   * through the appender when their values are plain, else in one statement. When that
   * fails, each body is inserted on its own, so a bad body gets its own answer and the
   * others are not held to it. A lone body that is not plain goes its own way at once:
   * trying it twice would only draw serial values twice (the appender draws none).
   */
  async #insertTogether(
    members: readonly SmallInsert[],
  ): Promise<PromiseSettledResult<{ table: Table } & LoadCounts>[]> {
    const rows = members.reduce((n, m) => n + m.small.rows, 0);
    const table = await this.#appendTogether(members, rows) ??
      (members.length > 1 ? await this.#insertJoined(members, rows) : undefined);
    if (!table) {
      return await Promise.allSettled(
        members.map(async (m) => this.#insertWhole(m.ref, await m.rows.whole(), "fail", m.keyed)),
      );
    }
    return members.map((m) => ({
      status: "fulfilled",
      value: { table, inserted: m.small.rows },
    }));
  }

  /**
   * Appends a group's `rows` with the appender when they are few and plain (see
   * {@link plainRows}), in one transaction: the appender's own, as its one flush commits
   * them. That keeps the group off DuckDB's asynchronous calls, each a hand-over to
   * another thread and back, which an explicit `BEGIN` and `COMMIT` would be
   * (docs/decisions.md, Rows: "A group's flush is its commit"). Members with an idempotency
   * key need their answers in the same transaction, so then it is an explicit one after all. The table they went into, or undefined, having
   * changed nothing, when they are not plain or anything fails.
   */
  async #appendTogether(
    members: readonly SmallInsert[],
    rows: number,
  ): Promise<Table | undefined> {
    const bytes = members.reduce((n, m) => n + m.small.bytes.length, 0);
    if (bytes > APPEND_BYTES) return undefined;
    const { ref, small: first } = members[0]!;
    return await this.#loadPlainly(ref, first, async (table, mapping) => {
      const plain = plainRows(table, mapping, members.map((m) => m.small.bytes), rows);
      if (!plain) return undefined;
      if (members.some((m) => m.keyed)) {
        await this.database.transaction(async (session) => {
          await appendRows(session, table, plain);
          await keepGroupAnswers(session, table, members);
        });
      } else await this.database.withSession((session) => appendRows(session, table, plain));
      return table;
    });
  }

  /**
   * Inserts a group's `rows` in one `read_json` statement from one file; the table they went
   * into, or undefined, having changed nothing, when anything fails.
   */
  #insertJoined(members: readonly SmallInsert[], rows: number): Promise<Table | undefined> {
    const { ref, small: first } = members[0]!;
    return this.#loadPlainly(ref, first, async (table, mapping) => {
      const path = `${this.spoolDir}/${crypto.randomUUID()}.json`;
      try {
        await writeLines(path, members.map((m) => m.small.bytes));
        await this.database.transaction(async (session) => {
          const inserted = await insertRows(session, table, path, mapping);
          if (inserted !== rows) throw new Error(`${inserted} of ${rows} rows inserted`);
          await keepGroupAnswers(session, table, members);
        });
        return table;
      } finally {
        await discard({ path });
      }
    });
  }

  /**
   * Loads each part of a large body while the next one arrives, in one transaction, so the
   * load overlaps the upload. Only the plain case: a body that fits in one part, any
   * failure, or rows whose keys the spool could not vouch for answer undefined, having
   * changed nothing, and the whole body then takes the ordinary path, which also explains
   * failures with whole-body row numbers.
   */
  async #insertWhileArriving(
    ref: TableRef,
    rows: ArrivingRows,
    keyed: KeyedWrite<Inserted> | undefined,
  ): Promise<Inserted | undefined> {
    // No lock while the first part arrives: a slow client must not hold up DDL on the table,
    // or anything else in its schema, for a body that turns out to fit in one part.
    const parts = rows.parts()[Symbol.asyncIterator]();
    const first = await parts.next().catch(() => undefined);
    if (!first || first.done || first.value.last) return undefined;
    const sample = first.value.progress;
    if (sample.form !== "objects") return undefined;
    return await this.#loadPlainly(ref, sample, (table, mapping) => {
      let summary: RowsSummary | undefined;
      async function* paths() {
        for (let part = first!.value;; part = await nextPart(parts)) {
          yield part.path;
          if (part.last) return void (summary = part.progress);
        }
      }
      return this.database.transaction(async (session) => {
        const inserted = await appendParts(session, table, paths(), mapping);
        // Keys only grow; the same count means the mapping saw them all.
        if (!summary?.keysComplete || summary.keys.length !== sample.keys.length) {
          throw new Error("Rows use keys the first part did not show");
        }
        if (keyed) await keepAnswer(session, keyed, { table, inserted });
        return { table, inserted };
      });
    });
  }

  /**
   * Runs `load` under an append's locks with the table and the columns `sample`'s keys map
   * to. Undefined, having changed nothing, when the table is missing (the whole-body path
   * answers that, after the body's own errors), a key maps to no column, or `load` fails:
   * the caller then takes the ordinary path. A full disk is thrown: no path mends that, and
   * the ordinary one would meet the database still being reopened.
   */
  #loadPlainly<T>(
    ref: TableRef,
    sample: RowsSummary,
    load: (table: Table, mapping: KeyColumn[]) => Promise<T>,
  ): Promise<T | undefined> {
    return this.#locks.run(appendLocks(ref), async () => {
      const table = await this.getTable(ref).catch(() => undefined);
      if (!table) return undefined;
      const { mapping, problems } = await matchRowKeys(table, sample, () => Promise.resolve(0));
      if (problems.length > 0 || mapping.length === 0) return undefined;
      try {
        return await load(table, mapping);
      } catch (error) {
        if (error instanceof ApiError && error.status === 507) throw error;
        return undefined;
      }
    });
  }

  #insertRecords(
    ref: TableRef,
    file: RowsFile,
    onConflict: OnConflict,
    keyed: KeyedWrite<Inserted> | undefined,
  ): Promise<Inserted> {
    return this.#locks.run(
      appendLocks(ref),
      async () => {
        const table = await this.getTable(ref);
        if (onConflict !== "fail" && !conflictKey(table)) {
          throw ApiError.invalidData(
            `on_conflict=${onConflict} needs a primary key or exactly one unique constraint; ` +
              `table "${table.name}" has neither`,
          );
        }
        const mapping = await mapRowKeys(this.database, table, file);
        try {
          return await this.database.transaction(async (session) => {
            const counts = await this.#loadChecked(session, table, file, mapping, onConflict);
            const result = { table, ...counts };
            if (keyed) await keepAnswer(session, keyed, result);
            return result;
          });
        } catch (error) {
          // An ApiError needs no explaining (and a database reopening could not give it).
          if (error instanceof MoreKeys || error instanceof ApiError) throw error;
          throw await this.database.withSession((session) =>
            explainLoadFailure(session, table, file, mapping, error)
          );
        }
      },
    );
  }

  async uploadTable(
    ref: TableRef,
    file: RowsFile,
    options: UploadOptions,
  ): Promise<{ table: Table; inserted: number }> {
    this.#noted(options.keyed);
    const loaded = await this.#uploadTable(ref, file, options);
    await this.#checkpointAfterLoad(loaded.inserted);
    return loaded;
  }

  async #uploadTable(
    ref: TableRef,
    file: RowsFile,
    options: UploadOptions,
  ): Promise<{ table: Table; inserted: number }> {
    try {
      try {
        return await this.#upload(ref, file, options, false);
      } catch (error) {
        if (!(error instanceof MoreKeys)) throw error;
        file = error.complete(file);
        return await this.#upload(ref, file, options, false);
      }
    } catch (error) {
      // Types inferred from a sample can miss a later row; infer from every row and retry.
      if (
        options.plan || !(error instanceof ApiError) || error.status !== 422 ||
        error.type !== "invalid_data"
      ) {
        throw error;
      }
      return await this.#upload(ref, file, options, true);
    }
  }

  async uploadCsv(
    ref: TableRef,
    path: string,
    options: UploadOptions & { readonly separatorLines?: boolean },
  ): Promise<{ table: Table; inserted: number }> {
    const described = await this.database.withSession((session) => describeCsv(session, path));
    const csv = { ...described.csv, separatorLines: options.separatorLines ?? true };
    const file: RowsFile = {
      path,
      rows: -1, // Unknown until loaded; the count comes from the table.
      form: "objects",
      keys: csv.columns,
      keysComplete: true,
      firstRowOfLength: new Map(),
      hasData: true,
      csv,
    };
    return await this.uploadTable(ref, file, options);
  }

  #upload(
    ref: TableRef,
    file: RowsFile,
    options: UploadOptions,
    inferFromAll: boolean,
  ): Promise<{ table: Table; inserted: number }> {
    const locks = [schemaLock(ref.schema, "shared"), tableLock(ref, "exclusive")];
    return this.#locks.run(
      locks,
      async () => {
        const existing = await this.database.withSession(async (session) => {
          const schema = await existingSchema(session, ref.schema);
          return { schema, row: await findTable(session, { schema, name: ref.name }) };
        });
        const at = { schema: existing.schema, name: existing.row?.name ?? ref.name };
        if (existing.row && options.ifExists === "fail") {
          throw ApiError.conflict(
            `Table "${at.schema}.${at.name}" already exists; use if_exists=replace or append`,
          );
        }
        const appending = existing.row !== undefined && options.ifExists === "append";
        let plan = options.plan;
        let defaults = new Map<PlannedColumn, string>();
        if (!appending) {
          plan ??= await this.database.withSession((session) =>
            inferPlan(session, at, file, inferFromAll)
          );
          const checked = plan;
          defaults = await this.database.withSession((session) => checkColumns(session, checked));
        }
        let table: Table | undefined;
        let mapping: readonly KeyColumn[] = [];
        // Appending changes no definition; creating or replacing does.
        type Upload = () => Promise<{ table: Table; inserted: number }>;
        const load = appending
          ? (work: Upload) => work()
          : (work: Upload) =>
            this.#descriptions.changing(work, {
              affects: heldBy(locks),
              leaves: (result) => [described(result.table)],
            });
        try {
          return await load(() =>
            this.database.transaction(async (session) => {
              if (appending) {
                table = (await describeTables(session, [existing.row!]))[0]!;
                if (plan) await checkSameColumns(session, table, plan);
              } else {
                if (existing.row) await dropTableIn(session, existing.row);
                table = await buildTable(session, at, plan!, defaults);
              }
              mapping = await mapRowKeys(this.database, table, file);
              const { inserted } = await this.#loadChecked(session, table, file, mapping, "fail");
              const result = { table, inserted };
              if (options.keyed) await keepAnswer(session, options.keyed, result);
              return result;
            })
          );
        } catch (error) {
          if (!table || error instanceof MoreKeys || error instanceof ApiError) throw error;
          const described = table;
          // A table this upload created was rolled back with it: there are no rows to clash with.
          throw await this.database.withSession((session) =>
            explainLoadFailure(session, described, file, mapping, error, appending)
          );
        }
      },
    );
  }

  /**
   * Checkpoints after a load of at least {@link CHECKPOINT_ROWS} rows. DuckDB writes a large
   * load's rows straight to the file, so its write-ahead log, whose size triggers the
   * automatic checkpoint, hardly grows and no checkpoint follows. Until one does, DuckDB holds
   * the load's part of a key's index in memory, and sorting the table can fail for want of
   * memory: after ten uploads of a million keyed rows of 8 columns the service held 82 MB of
   * index, and a CSV export of the table failed at the default 256 MiB. The load has
   * committed when this runs, so a checkpoint that fails is logged, not answered: the next
   * one writes the same.
   */
  async #checkpointAfterLoad(rows: number): Promise<void> {
    if (rows >= CHECKPOINT_ROWS) await this.#checkpoint("load");
  }

  /** Checkpoints after a committed `change`; a failure is logged (see above). */
  async #checkpoint(change: "load" | "rebuild"): Promise<void> {
    try {
      await this.database.withSession((session) => session.run("CHECKPOINT"));
    } catch (error) {
      this.logger?.log("warn", `checkpoint after a ${change} failed`, { error: String(error) });
    }
  }

  async readRecords(
    ref: TableRef,
    offset: number,
    limit: number,
  ): Promise<{ json: string; total: number }> {
    const stamp = this.#descriptions.stamp();
    const table = await this.getTable(ref);
    // A wide table is read in several statements: a transaction keeps them in one snapshot.
    const read =
      await (readsInSlices(table)
        ? this.database.transaction((session) => readRecords(session, table, offset, limit))
        : this.database.withSession((session) => readRecords(session, table, offset, limit)))
        .catch((error) => ({ error }));
    // No change was under way at any moment of the read, so none committed between the
    // description and the rows. Only the end of a change says it has committed: DuckDB may
    // answer a read that began after the commit before it answers the commit itself.
    if (this.#descriptions.unchangedSince(stamp)) {
      if ("error" in read) throw read.error;
      return read;
    }
    // A definition changed meanwhile: read the table and its rows in one snapshot.
    const since = this.#descriptions.stamp();
    return this.database.transaction(async (session) =>
      readRecords(session, await this.#describeIn(session, ref, since), offset, limit)
    );
  }

  async exportCsv(ref: TableRef): Promise<{ table: Table; stream: ReadableStream<Uint8Array> }> {
    // The table is described in the export's own snapshot: described before it, a rename,
    // retype or drop committed in between leaves the header stale and the statement naming
    // a column or table that is gone. A snapshot rather than the table's shared lock, which
    // would queue behind DDL that waits for a long load, and held while streaming would hold
    // DDL back for as long as the slowest client reads: DuckDB keeps the version the export
    // reads while DDL goes on and commits.
    const since = this.#descriptions.stamp();
    let table: Table | undefined;
    const stream = await this.database.streamLines(async (session) => {
      table = await this.#describeIn(session, ref, since);
      return { first: csvHeader(table.columns), sql: csvQuery(table) };
    });
    return { table: table!, stream };
  }

  columnTypes(plan: TablePlan): Promise<string[]> {
    return this.database.withSession(async (session) => {
      await checkColumns(session, plan);
      return await canonicalTypes(session, plan);
    });
  }

  templateVersions(name: string): Promise<StoredTemplate[]> {
    return this.database.withSession((session) => templateVersions(session, name));
  }

  async listTemplates(options: ListTemplatesOptions): Promise<Template[]> {
    const stored = await this.database.withSession((session) => listTemplates(session, options));
    return stored.map((s) => s.template);
  }

  addTemplate(
    template: NewTemplate,
    admit: (existing: readonly StoredTemplate[]) => void,
    keyedWrite?: KeyedWrite<Template>,
  ): Promise<Template> {
    const keyed = this.#noted(keyedWrite);
    return this.#locks.run(
      [templateLock(template.name)],
      () =>
        this.database.transaction(async (session) => {
          const existing = await templateVersions(session, template.name);
          admit(existing);
          const name = existing[0]?.template.name ?? template.name;
          const createdAt = new Date().toISOString();
          const added = await insertTemplate(session, { ...template, name, createdAt });
          if (keyed) await keepAnswer(session, keyed, added);
          return added;
        }),
    );
  }

  dropTemplate(
    name: string,
    version?: Version | "latest",
    keyedWrite?: KeyedWrite<string>,
  ): Promise<string> {
    const keyed = this.#noted(keyedWrite);
    return this.#locks.run(
      [templateLock(name)],
      () =>
        this.database.transaction(async (session) => {
          const existing = await templateVersions(session, name);
          const [chosen] = pickVersions(name, existing, version);
          const stored = chosen!.template.name;
          await deleteTemplate(session, stored, version && chosen!.version);
          if (keyed) await keepAnswer(session, keyed, stored);
          return stored;
        }),
    );
  }

  /**
   * Loads rows inside the caller's transaction while a second connection reads every key
   * the rows use, when the spool pass only sampled them; rows with keys outside the sample
   * abort the load with {@link MoreKeys}, before anything commits.
   */
  async #loadChecked(
    session: Session,
    table: Table,
    file: RowsFile,
    mapping: readonly KeyColumn[],
    onConflict: OnConflict,
  ): Promise<LoadCounts> {
    const otherKeys = file.keysComplete ? Promise.resolve([]) : keysOutside(this.database, file);
    otherKeys.catch(() => {});
    const counts = await loadRows(session, table, file, mapping, onConflict);
    const found = await otherKeys;
    if (found.length > 0) throw new MoreKeys(found);
    return counts;
  }

  async keptAnswer(scope: string, key: string, since: number): Promise<KeptAnswer | undefined> {
    if (!this.kept.mayHave(scope, key, since)) return undefined;
    return await this.database.withSession((session) => findAnswer(session, scope, key, since));
  }

  keepAnswer<R>(keyed: KeyedWrite<R>, result: R): Promise<void> {
    this.#noted(keyed);
    return this.database.transaction((session) => keepAnswer(session, keyed, result));
  }

  async forgetAnswers(before: number): Promise<void> {
    await this.database.withSession((session) => forgetAnswers(session, before));
    this.kept.forget(before);
  }

  async ready(): Promise<boolean> {
    try {
      // A real write to the file's metadata, rolled back: proves the database takes writes.
      await this.database.withSession(async (session) => {
        await session.run("BEGIN TRANSACTION");
        await session.run(`UPDATE ${META}.info SET value = value WHERE key = 'format'`);
        await session.run("ROLLBACK");
      });
      return true;
    } catch {
      return false;
    }
  }

  healthy(): Promise<boolean> {
    return this.database.usable();
  }

  openTransactions(): number {
    return this.database.openTransactions;
  }

  async memoryByUse(): Promise<Map<string, number>> {
    const rows = await this.database.withSession((session) =>
      session.rows(
        "SELECT lower(tag) AS use, memory_usage_bytes AS bytes FROM duckdb_memory() ORDER BY tag",
      )
    );
    return new Map(rows.map((row) => [String(row.use), Number(row.bytes)]));
  }

  close(): Promise<void> {
    return this.database.close();
  }
}
