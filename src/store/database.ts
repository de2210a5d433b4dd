/**
 * The DuckDB instance: opened hardened, handing out one connection per unit of work.
 *
 * @module
 */

import {
  type DuckDBAppender,
  type DuckDBConnection,
  type DuckDBDataChunk,
  DuckDBInstance,
  type DuckDBResult,
  type DuckDBValue,
  type JS,
} from "@duckdb/node-api";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { engineMessage, quoteLiteral } from "./sql.ts";
import { DUCKDB_READER_BYTES } from "../limits.ts";

/** A row as read back: DuckDB values converted to JavaScript, full precision kept. */
export type Row = Record<string, JS>;

/** Connections kept open between units of work. */
const MAX_IDLE_CONNECTIONS = 8;

/** Readers at once when DuckDB chooses its own memory limit (80% of RAM). */
const DEFAULT_READERS = 8;

/** A statement that reads a file with one of DuckDB's readers. */
const READS_FILE = /\b(read_json|read_json_objects|read_csv|sniff_csv)\s*\(/i;

/** Where the database lives and the one directory its file readers may touch. */
export interface DatabaseOptions {
  readonly path: string;
  /** Absolute directory DuckDB's readers may access; every other path is refused. */
  readonly spoolDir: string;
  /** Absolute directory for DuckDB's spill files. */
  readonly tempDir: string;
  /** DuckDB's memory limit in bytes (DuckDB's own default, 80% of RAM, when absent). */
  readonly memoryBytes?: number;
  /**
   * Block size of a database file created now (DuckDB's default, 256 KiB, when absent); an
   * existing file keeps the one it was created with.
   */
  readonly blockBytes?: number;
  /** Where a failed database and its reopening are reported. */
  readonly logger?: Logger;
}

/**
 * A DuckDB error after which the instance refuses all further work ("database has been
 * invalidated") until it is reopened: a checkpoint that failed, as on a full disk.
 */
const INVALIDATED = /FATAL Error|database has been invalidated|COMMIT succeeded and is durable/;

/**
 * Whether `message` reports a commit DuckDB made durable in its write-ahead log before the
 * automatic checkpoint after it failed: the changes are saved (reopening replays the log),
 * only the instance is lost. Not when the instance was already lost: DuckDB then refuses the
 * commit, quoting the earlier durable commit's words as the original error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { savedBeforeFailure } from "./database.ts";
 *
 * const durable = "Transaction COMMIT succeeded and is durable, but the autocheckpoint failed";
 * assert.ok(savedBeforeFailure(`FATAL Error: ${durable}: No space left on device`));
 * assert.ok(savedBeforeFailure(`Failed to append: FATAL Error: ${durable}`));
 * assert.ok(!savedBeforeFailure(
 *   "FATAL Error: Failed: database has been invalidated because of a previous fatal error. " +
 *     `The database must be restarted prior to being used again.\nOriginal error: "${durable}"`,
 * ));
 * ```
 */
export function savedBeforeFailure(message: string): boolean {
  return /COMMIT succeeded and is durable/.test(message) &&
    !/database has been invalidated/.test(message);
}

/** A write refused by an instance opened read-only. */
const READ_ONLY = /read-only/i;

/** Least milliseconds between tries to open read-write again a file opened read-only. */
const READ_ONLY_RETRY_MS = 1000;

/**
 * Longest new work waits, at such a try, for the work under way to end: the instance can only
 * be closed once none holds it. Work longer than that (an export, say) puts the try off.
 */
const READ_ONLY_DRAIN_MS = 250;

/** What a session tells the database about a failure it met. */
interface Failures {
  /** The error to throw for `error`, noting a database it leaves invalidated. */
  failure(error: unknown): unknown;
  /** Whether `error` is a commit that was saved before the database failed (see above). */
  committed(error: unknown): boolean;
}

/** A statement that begins or ends a transaction, and which. */
const TRANSACTION_CONTROL = /^\s*(BEGIN|START|COMMIT|END|ROLLBACK|ABORT)\b/i;

/**
 * `values` when there are any. Given values, even none, the bindings split the text into
 * statements, prepare the last and run it: three hand-offs to DuckDB's threads, each waiting
 * for the event loop, where a statement without values takes one.
 */
function bound(values: DuckDBValue[]): DuckDBValue[] | undefined {
  return values.length > 0 ? values : undefined;
}

/** What {@link Database.streamLines} streams: `first`, then a line for each row of `sql`. */
export interface Lines {
  readonly first: string;
  /** A statement whose first column is text. */
  readonly sql: string;
}

/**
 * One connection for one unit of work. Sharing a connection between overlapping queries
 * is unsafe in the DuckDB bindings, so a session is never used by two requests at once.
 */
export class Session {
  /**
   * Whether a transaction this session began with `BEGIN` is still open. A pooled connection
   * must never be handed on inside one: an insert group appending there would never commit.
   */
  #inTransaction = false;

  /**
   * `readers`: the slots a statement reading a file waits for (see DUCKDB_READER_BYTES);
   * `failures`: the database's judgement of what fails.
   */
  constructor(
    readonly connection: DuckDBConnection,
    private readonly readers: Slots,
    private readonly failures: Failures,
  ) {}

  /** Whether a transaction begun through this session is still open. */
  get inTransaction(): boolean {
    return this.#inTransaction;
  }

  /** Runs one statement with bound values and returns its rows. */
  async rows(sql: string, values: DuckDBValue[] = []): Promise<Row[]> {
    const reader = await this.#statement(
      sql,
      () => this.connection.runAndReadAll(sql, bound(values)),
      true,
    );
    return reader?.getRowObjectsJS() ?? [];
  }

  /** Runs one statement with bound values, ignoring any result. */
  async run(sql: string, values: DuckDBValue[] = []): Promise<void> {
    await this.#statement(sql, () => this.connection.run(sql, bound(values)), false);
  }

  /** Runs one statement with bound values and returns how many rows it changed. */
  async changes(sql: string, values: DuckDBValue[] = []): Promise<number> {
    const result = await this.#statement(sql, () => this.connection.run(sql, bound(values)), true);
    return result?.rowsChanged ?? 0;
  }

  /**
   * Runs `statement`, in a reader slot when `sql` reads a file. One that committed before the
   * database failed has done its work, but its result went with the instance: undefined then,
   * unless the caller `reads` the result and there was one (a transaction's end has none),
   * which fails saying the change was saved.
   */
  async #statement<T>(
    sql: string,
    statement: () => Promise<T>,
    reads: boolean,
  ): Promise<T | undefined> {
    const control = TRANSACTION_CONTROL.exec(sql)?.[1]?.toUpperCase();
    // An ending statement that fails leaves the state unknown: count it as still open.
    if (control !== undefined && control !== "BEGIN" && control !== "START") {
      this.#inTransaction = true;
    }
    try {
      const result = await (READS_FILE.test(sql) ? this.readers.run(statement) : statement());
      if (control !== undefined) this.#inTransaction = control === "BEGIN" || control === "START";
      return result;
    } catch (error) {
      if (!this.failures.committed(error)) throw this.failures.failure(error);
      this.#inTransaction = false;
      if (reads && control === undefined) {
        throw ApiError.unavailable(
          "The change was saved, but the database failed before it could say what it changed; " +
            "check before repeating it",
          1,
        );
      }
      return undefined;
    }
  }

  /**
   * An appender to `schema.table`. In a transaction its rows go into it; outside one, each
   * flush (closing flushes) is a transaction of its own, committed as it returns.
   */
  appender(schema: string, table: string): Promise<DuckDBAppender> {
    return this.connection.createAppender(table, schema);
  }

  /**
   * Flushes and closes `appender`: outside a transaction, that commits its rows. A flush
   * that committed before the database failed has done its work and returns.
   */
  close(appender: DuckDBAppender): void {
    try {
      appender.closeSync();
    } catch (error) {
      if (!this.failures.committed(error)) throw error;
    }
  }
}

/**
 * The open database. When DuckDB invalidates it (a checkpoint that failed, as on a full
 * disk), it reopens the file itself once the work under way has ended; until then, and while
 * the file cannot be reopened, new work fails with the cause (507 for a full disk, else 503).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Database } from "./database.ts";
 *
 * const dir = await Deno.makeTempDir();
 * const db = await Database.open({ path: ":memory:", spoolDir: dir, tempDir: dir });
 * const rows = await db.withSession((s) => s.rows("SELECT 40 + 2 AS answer"));
 * assert.equal(rows[0]?.answer, 42);
 * await db.close();
 * ```
 */
export class Database {
  readonly #idle: DuckDBConnection[] = [];
  /** Connections doing work, to interrupt when the instance fails under them. */
  readonly #busy = new Set<DuckDBConnection>();
  /**
   * How to break off each export under way. An export holds its connection between reads,
   * for as long as its client pleases: on a failed instance, it must not hold back the reopen.
   */
  readonly #exports = new Set<(failure: ApiError) => void>();
  readonly #readers: Slots;
  readonly #failures: Failures = {
    failure: (error) => this.#failure(error),
    committed: (error) => this.#committed(error),
  };
  #instance: DuckDBInstance | undefined;
  #active = 0;
  #transactions = 0;
  #closed = false;
  /** Set while the instance is invalidated: what work meets until it is reopened. */
  #broken: ApiError | undefined;
  #reopening: Promise<void> | undefined;
  /** When the instance was opened read-only because the disk was full, that time. */
  #readOnlySince: number | undefined;
  /** Set while new work waits for the work under way to end, to open read-write again. */
  #draining: Promise<void> | undefined;
  /** Called when the last work under way ends, while something waits for that. */
  #onIdle: (() => void) | undefined;

  private constructor(instance: DuckDBInstance, private readonly options: DatabaseOptions) {
    this.#instance = instance;
    const { memoryBytes } = options;
    this.#readers = new Slots(
      memoryBytes ? Math.max(1, Math.floor(memoryBytes / DUCKDB_READER_BYTES)) : DEFAULT_READERS,
    );
  }

  /**
   * Opens (creating if needed) the database file with extensions off, file access confined
   * to the spool directory, and the configuration locked against later `SET`s. A file that
   * is not a DuckDB database, is damaged or truncated, or is held by another process is
   * refused, with the reason as the message and the file untouched.
   */
  static async open(options: DatabaseOptions): Promise<Database> {
    return new Database(await openInstance(options), options);
  }

  /**
   * Runs `work` on a connection of its own, outside any transaction: each statement commits by
   * itself unless `work` begins one, and it must end it. One left open fails `work` and is
   * rolled back with its connection.
   */
  async withSession<T>(work: (session: Session) => Promise<T>): Promise<T> {
    const connection = await this.#acquire();
    const session = new Session(connection, this.#readers, this.#failures);
    let healthy = true;
    try {
      const result = await work(session);
      if (session.inTransaction) {
        throw new Error("A session ended inside the transaction it began; it was rolled back");
      }
      return result;
    } catch (error) {
      healthy = false;
      throw this.#failure(error);
    } finally {
      this.#release(connection, healthy);
    }
  }

  /** A connection for one unit of work: from the pool unless `fresh`. */
  async #acquire(fresh = false): Promise<DuckDBConnection> {
    if (this.#closed) throw new Error("The database is closed");
    if (this.#readOnlySince !== undefined) await this.#writeAgainIfDue();
    if (this.#broken) await this.#reopen();
    // Counted before connecting: a reopen must not close the instance under a connect.
    this.#active++;
    let connection: DuckDBConnection;
    try {
      connection = (fresh ? undefined : this.#idle.pop()) ?? await this.#instance!.connect();
    } catch (error) {
      this.#active--;
      throw this.#failure(error);
    }
    this.#busy.add(connection);
    return connection;
  }

  /** Puts a connection back in the pool; one that failed at something is closed instead. */
  #release(connection: DuckDBConnection, healthy: boolean): void {
    this.#active--;
    this.#busy.delete(connection);
    if (healthy && !this.#closed && !this.#broken && this.#idle.length < MAX_IDLE_CONNECTIONS) {
      this.#idle.push(connection);
    } else {
      connection.closeSync();
    }
    if (this.#active > 0) return;
    this.#onIdle?.();
    // The last work on a failed instance has ended: reopen now, not at the next request.
    if (this.#broken) this.#reopen().catch(() => {});
  }

  /**
   * Tries, at most once a second, to open read-write again a file opened read-only. The
   * instance must be closed for that, so new work waits until none holds it: were the try
   * left for a moment with no work under way, overlapping requests would put it off for good.
   * Work still under way after READ_ONLY_DRAIN_MS puts it off a second instead, and new work
   * goes on read-only: a unit waiting for a second connection of its own must not wait for
   * itself, nor a read for a slow export.
   */
  #writeAgainIfDue(): Promise<void> {
    if (this.#draining) return this.#draining;
    if (Date.now() - this.#readOnlySince! < READ_ONLY_RETRY_MS) return Promise.resolve();
    this.#draining = this.#whenIdle(READ_ONLY_DRAIN_MS)
      .then(async (idle) => {
        if (idle) await this.#reopen().catch(() => {}); // Read-only again, or failed: logged.
        else this.#readOnlySince = Date.now();
      })
      .finally(() => this.#draining = undefined);
    return this.#draining;
  }

  /** Resolves true once no work holds the instance, false if some still does after `ms`. */
  #whenIdle(ms: number): Promise<boolean> {
    if (this.#active === 0) return Promise.resolve(true);
    const { promise, resolve } = Promise.withResolvers<boolean>();
    const settle = (idle: boolean) => {
      clearTimeout(timer);
      this.#onIdle = undefined;
      resolve(idle);
    };
    const timer = setTimeout(() => settle(false), ms);
    this.#onIdle = () => settle(true);
    return promise;
  }

  /**
   * The error to throw for `error`: a full disk as 507, DuckDB out of memory as 503, and on an
   * instance that failed, that failure. An error that invalidated the instance marks it so.
   */
  #failure(error: unknown): unknown {
    if (error instanceof ApiError) return error;
    const text = error instanceof Error ? error.message : String(error);
    // Opened read-only because the disk was full: a write meets that disk.
    if (this.#readOnlySince !== undefined && READ_ONLY.test(text)) {
      return ApiError.insufficientStorage();
    }
    if (INVALIDATED.test(text)) this.#break(error);
    return ApiError.fromFullDisk(error) ?? outOfMemory(error) ?? this.#broken ?? error;
  }

  /** Whether `error` is a commit saved before the instance failed; marks it failed if so. */
  #committed(error: unknown): boolean {
    if (!(error instanceof Error && savedBeforeFailure(error.message))) return false;
    this.#break(error);
    return true;
  }

  /** Marks the instance failed and interrupts the work on it, which can only fail now. */
  #break(error: unknown): void {
    if (this.#broken) return;
    this.#broken = ApiError.fromFullDisk(error) ??
      ApiError.unavailable("The database failed and is being reopened; try again", 1);
    this.options.logger?.log("error", "database failed; reopening it", {
      error: engineMessage(error),
    });
    for (const connection of this.#busy) connection.interrupt();
    for (const breakOff of this.#exports) breakOff(this.#broken);
  }

  /**
   * Reopens a failed instance (or one opened read-only) once no work holds a connection to
   * it: DuckDB replays its write-ahead log, so every commit it acknowledged is there. Until
   * then new work on a failed one fails with the failure (a unit may be waiting for a second
   * connection of its own, so it cannot wait here), and so does work while the file cannot be
   * reopened.
   */
  #reopen(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("The database is closed"));
    if (this.#active > 0) return Promise.reject(this.#broken);
    // Cleared only once settled, so every caller meanwhile waits for the same attempt.
    this.#reopening ??= this.#openAgain().finally(() => this.#reopening = undefined);
    return this.#reopening;
  }

  /**
   * Opens the file again, read-write; read-only when the disk is too full for that (DuckDB
   * writes when it opens a file with a log to replay), so reads go on and writes get 507
   * until a later try opens it read-write.
   */
  async #openAgain(): Promise<void> {
    try {
      for (const connection of this.#idle.splice(0)) connection.closeSync();
      this.#instance?.closeSync();
      // Undefined until the file is open again: a failed attempt must not close it twice.
      this.#instance = undefined;
      let instance: DuckDBInstance;
      let readOnly = false;
      try {
        instance = await openInstance(this.options);
      } catch (error) {
        if (!ApiError.fromFullDisk(error)) throw error;
        this.options.logger?.log("warn", "database cannot be reopened for writing", {
          error: error instanceof Error ? error.message : String(error),
        });
        instance = await openInstance(this.options, true);
        readOnly = true;
      }
      if (this.#closed) return instance.closeSync(); // Shut down meanwhile.
      this.#instance = instance;
      this.#broken = undefined;
      this.#readOnlySince = readOnly ? Date.now() : undefined;
      this.options.logger?.log(
        "warn",
        readOnly ? "database reopened read-only" : "database reopened",
      );
    } catch (error) {
      this.#broken ??= ApiError.unavailable("The database failed and is being reopened", 1);
      this.options.logger?.log("error", "database could not be reopened", {
        error: error instanceof Error ? error.message : String(error),
      });
      throw ApiError.unavailable(
        "The database failed and cannot be reopened now; try again later",
        1,
      );
    }
  }

  /**
   * Whether the database can do work: true unless it failed and reopening it fails (this
   * tries); an orchestrator restarting the process on false gets a fresh start.
   */
  async usable(): Promise<boolean> {
    if (!this.#broken || this.#closed) return !this.#closed;
    // Work on the failed instance is still ending; the reopen follows.
    if (this.#active > 0) return true;
    return await this.#reopen().then(() => true, () => false);
  }

  /**
   * Streams the text of the first column of each result row, one line each, after the first
   * line, both as `prepare` gives them. `prepare` runs in the statement's transaction, so
   * what it reads (a table's description, say) is of the same snapshot as the rows.
   * Resolves once the statement has given its first rows: one that fails before any (a sort
   * out of memory, say) rejects here, before an answer has begun, as any other statement
   * would, and so does `prepare`; a later failure can only break the stream off. The
   * connection is held until the stream ends or is cancelled, so a slow client holds a
   * connection, not the result; when the instance fails, the stream is broken off at once,
   * read or not, so that a client that stopped reading does not hold back its reopening.
   */
  async streamLines(
    prepare: (session: Session) => Promise<Lines>,
  ): Promise<ReadableStream<Uint8Array>> {
    const encoder = new TextEncoder();
    const connection = await this.#acquire(true);
    let held = true;
    let inTransaction = false;
    // Whether a statement or read is under way on the connection, as until the stream begins.
    let reading = true;
    let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
    let result: DuckDBResult | undefined;
    const release = () => {
      if (!held) return;
      held = false;
      this.#exports.delete(breakOff);
      if (inTransaction) this.#transactions--;
      inTransaction = false;
      this.#release(connection, false);
      // A result not read to its end keeps DuckDB's instance, and its file, open until it is
      // collected, its connection closed or not: a failed instance is let go of now instead.
      if (this.#broken && result) void readToEnd(result);
    };
    // The client learns of it as a response cut short. A read under way on the connection
    // (interrupted by now) lets it go when it returns: closing it under DuckDB is unsafe.
    const breakOff = (failure: ApiError) => {
      this.#exports.delete(breakOff);
      controller?.error(failure);
      if (!reading) release();
    };
    this.#exports.add(breakOff);
    let next: DuckDBDataChunk | null | undefined;
    let first: string;
    try {
      // A snapshot: the export is consistent even while writers go on.
      await connection.run("BEGIN TRANSACTION");
      inTransaction = true;
      this.#transactions++;
      const lines = await prepare(new Session(connection, this.#readers, this.#failures));
      first = lines.first;
      result = await connection.stream(lines.sql);
      // The statement runs here, up to its first rows: all of a sort's work, say.
      next = await result.fetchChunk();
    } catch (error) {
      release();
      throw this.#failure(error);
    }
    reading = false;
    // Broken off while it began: no stream would learn of that.
    if (this.#broken) {
      release();
      throw this.#broken;
    }
    return new ReadableStream<Uint8Array>({
      start: (started) => {
        controller = started;
        controller.enqueue(encoder.encode(`${first}\n`));
      },
      pull: async (controller) => {
        reading = true;
        try {
          // A failed instance waits for this connection to be let go before it is reopened.
          if (this.#broken) throw this.#broken;
          const chunk = next === undefined ? await result!.fetchChunk() : next;
          next = undefined;
          if (!chunk || chunk.rowCount === 0) {
            await connection.run("COMMIT").catch(() => {});
            release();
            controller.close();
            return;
          }
          const lines = chunk.getColumnValues(0) as string[];
          controller.enqueue(encoder.encode(`${lines.join("\n")}\n`));
        } catch (error) {
          release();
          controller.error(this.#failure(error));
        } finally {
          reading = false;
        }
      },
      cancel: release,
    }, { highWaterMark: 1 });
  }

  /**
   * Runs `work` in one transaction on a connection of its own: committed when `work`
   * returns, rolled back when it throws. A commit saved before the instance failed counts.
   */
  async transaction<T>(work: (session: Session) => Promise<T>): Promise<T> {
    const connection = await this.#acquire();
    try {
      await connection.run("BEGIN TRANSACTION");
    } catch (error) {
      this.#release(connection, false);
      throw this.#failure(error);
    }
    this.#transactions++;
    // A connection whose transaction failed is not trusted with another.
    let healthy = false;
    try {
      let result: T;
      try {
        result = await work(new Session(connection, this.#readers, this.#failures));
      } catch (error) {
        await connection.run("ROLLBACK").catch(() => {});
        throw error;
      }
      try {
        await connection.run("COMMIT");
      } catch (error) {
        if (!this.#committed(error)) throw error;
      }
      healthy = true;
      return result;
    } catch (error) {
      throw this.#failure(error);
    } finally {
      this.#transactions--;
      this.#release(connection, healthy);
    }
  }

  /** Transactions begun by {@link transaction} or an export and not yet ended. */
  get openTransactions(): number {
    return this.#transactions;
  }

  /** Connections currently doing work. */
  get activeSessions(): number {
    return this.#active;
  }

  /** Writes everything to the database file and closes it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      // A reopen under way would open the file again behind the close.
      await this.#reopening?.catch(() => {});
      // A failed instance writes nothing more; its write-ahead log holds every commit.
      if (!this.#broken && this.#readOnlySince === undefined) {
        await this.withSession((session) => session.run("CHECKPOINT"));
      }
    } finally {
      this.#closeNow();
      // One the checkpoint failing began closes what it opens; until it has, DuckDB is busy.
      await this.#reopening?.catch(() => {});
    }
  }

  #closeNow(): void {
    this.#closed = true;
    for (const connection of this.#idle.splice(0)) connection.closeSync();
    this.#instance?.closeSync();
    this.#instance = undefined;
  }
}

/**
 * A DuckDB instance on `options.path`, hardened (see {@link Database.open}); with `readOnly`,
 * one that refuses every write.
 */
async function openInstance(options: DatabaseOptions, readOnly = false): Promise<DuckDBInstance> {
  const onDisk = options.path !== ":memory:";
  if (onDisk) await checkHeader(options.path);
  let instance: DuckDBInstance;
  try {
    instance = await DuckDBInstance.create(options.path, {
      autoinstall_known_extensions: "false",
      autoload_known_extensions: "false",
      allow_community_extensions: "false",
      temp_directory: options.tempDir,
      ...(options.blockBytes ? { default_block_size: String(options.blockBytes) } : {}),
      ...(readOnly ? { access_mode: "READ_ONLY" } : {}),
      ...(options.memoryBytes
        ? { memory_limit: `${Math.max(1, Math.floor(options.memoryBytes / 1024 ** 2))}MiB` }
        : {}),
    });
  } catch (error) {
    throw new Error(openFailure(error));
  }
  const connection = await instance.connect();
  try {
    if (onDisk) await checkLength(connection, options.path);
    // Order matters: each SET below would be refused after the next one.
    await connection.run(`SET allowed_directories=[${quoteLiteral(`${options.spoolDir}/`)}]`);
    // GLOBAL: every later connection renders and reads times in UTC, whatever the
    // machine's zone; a plain SET would reach only this connection.
    await connection.run("SET GLOBAL TimeZone='UTC'");
    await connection.run("SET enable_external_access=false");
    await connection.run("SET lock_configuration=true");
  } catch (error) {
    // Nothing was written yet: close without a checkpoint.
    connection.closeSync();
    instance.closeSync();
    throw error;
  }
  connection.closeSync();
  return instance;
}

/** Reads `result` to its end, or its failure, for nothing. */
async function readToEnd(result: DuckDBResult): Promise<void> {
  try {
    while ((await result.fetchChunk())?.rowCount);
  } catch {
    // Ended all the same.
  }
}

/**
 * DuckDB's buffer manager short of memory, in its own error or inside another: a commit that
 * cannot allocate the blocks it appends to ("Failed to commit: could not allocate block", as
 * a table of hundreds of columns needs one per column), a checkpoint that cannot pin one.
 */
const OUT_OF_MEMORY = /^Out of Memory Error|could not allocate block of size|failed to pin block/;

/**
 * DuckDB running out of memory as a 503 that says so, not an internal error: nothing failed
 * that a retry, or a higher limit, would not mend. Undefined for any other error.
 */
function outOfMemory(error: unknown): ApiError | undefined {
  if (!(error instanceof Error && OUT_OF_MEMORY.test(error.message))) return;
  return ApiError.unavailable(
    "The database ran out of memory (DUCKDB_MEMORY_LIMIT); nothing was changed, try again",
    1,
  );
}

/** A counting semaphore: at most `free` runs at once, the others wait first come, first served. */
class Slots {
  readonly #waiting: (() => void)[] = [];

  constructor(private free: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so a newcomer cannot take it first.
      const next = this.#waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

/** Bytes before a DuckDB file's first block: a main header and two database headers. */
const HEADERS_BYTES = 3 * 4096;

/**
 * Refuses a file that is not a DuckDB database from its first bytes, before DuckDB opens
 * it: for a SQLite file DuckDB would go looking for an extension instead of saying so.
 */
async function checkHeader(path: string): Promise<void> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return; // A new database.
    throw error;
  }
  const head = new Uint8Array(16);
  let length: number | null;
  try {
    length = await file.read(head);
  } finally {
    file.close();
  }
  const text = String.fromCharCode(...head.subarray(0, length ?? 0));
  // Empty is refused, not taken as new: it is what a failed copy or restore leaves behind.
  if (text === "") throw new Error("the file is empty (remove it to start a new database)");
  if (text.startsWith("SQLite format 3\0")) {
    throw new Error("it is a SQLite database, not a DuckDB one");
  }
  // A checksum, then the magic bytes.
  if (text.slice(8, 12) !== "DUCK") throw new Error("it is not a DuckDB database file");
}

/**
 * Refuses a file too short to hold the blocks in use. DuckDB reads blocks only when a query
 * needs them, so a lost tail would otherwise pass start-up and fail requests later. The
 * header's total may exceed the file (a checkpoint cuts free blocks off the end without
 * lowering it), but every block in use lies within the file.
 */
async function checkLength(connection: DuckDBConnection, path: string): Promise<void> {
  const reader = await connection.runAndReadAll(
    `SELECT total_blocks - free_blocks AS used, block_size FROM pragma_database_size()
     WHERE database_name = current_database()`,
  );
  const [row] = reader.getRowObjectsJS();
  const expected = HEADERS_BYTES + Number(row?.used ?? 0) * Number(row?.block_size ?? 0);
  const { size } = await Deno.stat(path);
  if (size < expected) {
    throw new Error(
      `the file is truncated (${size} bytes, too few for the ${expected} its blocks in use need)`,
    );
  }
}

/** Why DuckDB could not open the file, in a few words and one line. */
function openFailure(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  if (text.includes("Could not set lock on file")) {
    const pid = /\(PID (\d+)\)/.exec(text)?.[1];
    return `another process${pid ? ` (PID ${pid})` : ""} is using it`;
  }
  if (/Corrupt database file|Could not read enough bytes|not a valid DuckDB database/.test(text)) {
    return `the file is damaged (${engineMessage(error)})`;
  }
  const denied = /: (Permission denied|Operation not permitted|Read-only file system)$/m.exec(text);
  if (denied) return `it cannot be opened for reading and writing (${denied[1]})`;
  return engineMessage(error);
}
