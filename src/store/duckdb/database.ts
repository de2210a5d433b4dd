/**
 * The DuckDB instance: opened hardened, handing out one connection per unit of work.
 *
 * @module
 */

import type {
  DuckDBConnection,
  DuckDBDataChunk,
  DuckDBInstance,
  DuckDBResult,
  JS,
} from "@duckdb/node-api";
import { ApiError } from "../../errors.ts";
import { engineMessage } from "./sql.ts";
import { DUCKDB_READER_BYTES } from "../../limits.ts";
import { type DatabaseOptions, defaultMemoryBytes, openInstance } from "./database_open.ts";
import { Reopener } from "./database_reopen.ts";
import { INVALIDATED, outOfMemory, READ_ONLY, savedBeforeFailure } from "./engine_errors.ts";
import { bound, type Failures, type Lines, Session, Slots } from "./session.ts";
import { boundMemory, interruptAfter } from "./interrupts.ts";
import { lineStream } from "./line_stream.ts";

export { type Lines, Session } from "./session.ts";
export { savedBeforeFailure } from "./engine_errors.ts";
export type { DatabaseOptions } from "./database_open.ts";

/** A row as read back: DuckDB values converted to JavaScript, full precision kept. */
export type Row = Record<string, JS>;

/**
 * How far above `memoryBytes` the process's memory may grow during clients' reads before they
 * are stopped: the contract allows 256 MiB; half is left for what grows between two samples.
 */
const READ_MEMORY_MARGIN = 128 * 1024 ** 2;

/** Connections kept open between units of work. */
const MAX_IDLE_CONNECTIONS = 8;

/** Readers at once when DuckDB chooses its own memory limit (80% of RAM). */
const DEFAULT_READERS = 8;

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
  /** Results of streams cut short, being ended before their connections are let go. */
  readonly #ending = new Set<Promise<void>>();
  readonly #readers: Slots;
  readonly #failures: Failures = {
    failure: (error) => this.#failure(error),
    committed: (error) => this.#committed(error),
  };
  #instance: DuckDBInstance | undefined;
  #active = 0;
  #transactions = 0;
  #closed = false;
  /** The failed instance's reopening, and the file opened read-only's return to writing. */
  readonly #reopener: Reopener;

  private constructor(instance: DuckDBInstance, private readonly options: DatabaseOptions) {
    this.#instance = instance;
    this.#reopener = new Reopener({
      activeWork: () => this.#active,
      isClosed: () => this.#closed,
      closeInstance: () => {
        for (const connection of this.#idle.splice(0)) connection.closeSync();
        this.#instance?.closeSync();
        // Undefined until the file is open again: a failed attempt must not close it twice.
        this.#instance = undefined;
      },
      useInstance: (opened) => this.#instance = opened,
    }, options);
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
  static async open(given: DatabaseOptions): Promise<Database> {
    const options = given.memoryBytes
      ? given
      : { ...given, memoryBytes: await defaultMemoryBytes() };
    const database = new Database(await openInstance(options), options);
    // Clients' reads may take DuckDB's limit and a margin above it, then are stopped (503).
    boundMemory(options.memoryBytes && options.memoryBytes + READ_MEMORY_MARGIN);
    return database;
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

  /** A connection for one unit of work, from the pool when one is idle. */
  async #acquire(): Promise<DuckDBConnection> {
    if (this.#closed) throw new Error("The database is closed");
    if (this.#reopener.readOnlySince !== undefined) await this.#reopener.writeAgainIfDue();
    if (this.#reopener.broken) await this.#reopener.reopened();
    // Counted before connecting: a reopen must not close the instance under a connect.
    this.#active++;
    let connection: DuckDBConnection;
    try {
      connection = this.#idle.pop() ?? await this.#instance!.connect();
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
    if (
      healthy && !this.#closed && !this.#reopener.broken && this.#idle.length < MAX_IDLE_CONNECTIONS
    ) {
      this.#idle.push(connection);
    } else {
      connection.closeSync();
    }
    if (this.#active > 0) return;
    this.#reopener.idle();
  }

  /**
   * The error to throw for `error`: a full disk as 507, DuckDB out of memory as 503, and on an
   * instance that failed, that failure. An error that invalidated the instance marks it so.
   */
  #failure(error: unknown): unknown {
    if (error instanceof ApiError) return error;
    const text = error instanceof Error ? error.message : String(error);
    // Opened read-only because the disk was full: a write meets that disk.
    if (this.#reopener.readOnlySince !== undefined && READ_ONLY.test(text)) {
      return ApiError.insufficientStorage();
    }
    if (INVALIDATED.test(text)) this.#break(error);
    return ApiError.fromFullDisk(error) ?? outOfMemory(error) ?? this.#reopener.broken ?? error;
  }

  /** Whether `error` is a commit saved before the instance failed; marks it failed if so. */
  #committed(error: unknown): boolean {
    if (!(error instanceof Error && savedBeforeFailure(error.message))) return false;
    this.#break(error);
    return true;
  }

  /** Marks the instance failed and interrupts the work on it, which can only fail now. */
  #break(error: unknown): void {
    if (this.#reopener.broken) return;
    this.#reopener.broken = ApiError.fromFullDisk(error) ??
      ApiError.unavailable("The database failed and is being reopened; try again", 1);
    this.options.logger?.log("error", "database failed; reopening it", {
      error: engineMessage(error),
    });
    for (const connection of this.#busy) connection.interrupt();
    for (const breakOff of this.#exports) breakOff(this.#reopener.broken);
  }

  /**
   * Whether the database can do work: true unless it failed and reopening it fails (this
   * tries); an orchestrator restarting the process on false gets a fresh start.
   */
  async usable(): Promise<boolean> {
    if (!this.#reopener.broken || this.#closed) return !this.#closed;
    // Work on the failed instance is still ending; the reopen follows.
    if (this.#active > 0) return true;
    return await this.#reopener.reopen().then(() => true, () => false);
  }

  /**
   * Streams the text of the first column of each result row, after `first`, as `prepare`
   * gives them (see {@link Lines}). `prepare` runs in the statement's transaction, so what it
   * reads (a table's description, say) is of the same snapshot as the rows.
   * Resolves once the statement has given its first rows: one that fails before any (a sort
   * out of memory, say) rejects here, before an answer has begun, as any other statement
   * would, and so does `prepare`; a later failure can only break the stream off. The
   * connection is held until the stream ends or is cancelled, so a slow client holds a
   * connection, not the result; when the instance fails, the stream is broken off at once,
   * read or not, so that a client that stopped reading does not hold back its reopening.
   * With `timeoutMs`, the work is interrupted when it takes that long to give its first rows,
   * `prepare` included, or then to give the next, and fails (or the stream breaks off) with
   * {@link ApiError.queryTimeout}: a long export that keeps making progress goes on, and time
   * spent waiting for the client to read does not count.
   */
  async streamLines(
    prepare: (session: Session) => Promise<Lines>,
    options: { readonly timeoutMs?: number } = {},
  ): Promise<ReadableStream<Uint8Array>> {
    // A pooled connection, and back to the pool when the stream ends whole and committed;
    // one broken off, cancelled or interrupted is closed (its result may still be open).
    const connection = await this.#acquire();
    let held = true;
    let inTransaction = false;
    // Whether a statement or read is under way on the connection, as until the stream begins.
    let reading = true;
    let cancelled = false;
    // The stream, once it begins: breaking off before then, the start learns of it.
    const begun: { stream?: ReturnType<typeof lineStream> } = {};
    let result: DuckDBResult | undefined;
    const deadline = interruptAfter(connection, options.timeoutMs);
    const release = (healthy = false) => {
      if (!held) return;
      held = false;
      deadline.clear();
      this.#exports.delete(breakOff);
      if (inTransaction) this.#transactions--;
      inTransaction = false;
      // A result not read to its end keeps its transaction open in DuckDB, and the instance
      // and its file, until it is collected, its connection closed or not. A failed instance
      // is let go of now, and the result read out after.
      if (healthy || !result || this.#reopener.broken) {
        this.#release(connection, healthy);
        if (this.#reopener.broken && result) void readToEnd(result);
        return;
      }
      // Otherwise a checkpoint meanwhile would fail ("other write transactions active"):
      // interrupted, the result ends at once, and then its connection is closed.
      connection.interrupt();
      const ended = readToEnd(result).finally(() => {
        this.#release(connection, false);
        this.#ending.delete(ended);
      });
      this.#ending.add(ended);
    };
    // A read under way on the connection (interrupted by now) lets it go when it returns:
    // closing it under DuckDB is unsafe.
    const breakOff = (failure: ApiError) => {
      this.#exports.delete(breakOff);
      begun.stream?.breakOff(failure);
      if (!reading) release();
    };
    this.#exports.add(breakOff);
    let next: DuckDBDataChunk | null | undefined;
    let lines: Lines;
    try {
      // A snapshot: the export is consistent even while writers go on.
      await connection.run("BEGIN TRANSACTION");
      inTransaction = true;
      this.#transactions++;
      lines = await prepare(new Session(connection, this.#readers, this.#failures));
      result = await connection.stream(lines.sql, bound(lines.values), lines.types);
      // The statement runs here, up to its first rows: all of a sort's work, say.
      next = await result.fetchChunk();
      deadline.check();
      deadline.clear();
    } catch (error) {
      release();
      throw deadline.error() ?? this.#failure(error);
    }
    reading = false;
    // Broken off while it began: no stream would learn of that.
    if (this.#reopener.broken) {
      release();
      throw this.#reopener.broken;
    }
    const stream = begun.stream = lineStream(lines, {
      read: async () => {
        reading = true;
        // A failed instance waits for this connection to be let go before it is reopened.
        if (this.#reopener.broken) throw this.#reopener.broken;
        let chunk = next;
        if (chunk === undefined) {
          deadline.restart();
          chunk = await result!.fetchChunk();
          deadline.clear();
        }
        next = undefined;
        // An interrupted stream ends as if it were complete: the deadline says it is not.
        deadline.check();
        return chunk && chunk.rowCount > 0 ? chunk : null;
      },
      finish: async () => {
        const committed = await connection.run("COMMIT").then(() => true, () => false);
        release(committed && !deadline.error());
      },
      fail: (error) => {
        release();
        return deadline.error() ?? this.#failure(error);
      },
      settled: () => {
        reading = false;
        if (cancelled) release();
      },
      cancel: () => {
        cancelled = true;
        if (!reading) release();
      },
    });
    return stream.stream;
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

  /** Interrupts the work under way and breaks off every export with `failure`. */
  interrupt(failure: Error): void {
    const reason = failure instanceof ApiError ? failure : ApiError.unavailable(failure.message);
    for (const breakOff of [...this.#exports]) breakOff(reason);
    for (const connection of this.#busy) connection.interrupt();
  }

  /** Writes everything to the database file and closes it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      // A reopen under way would open the file again behind the close.
      await this.#reopener.reopening?.catch(() => {});
      // An export a client cut short holds a transaction until its result has ended.
      await Promise.all(this.#ending);
      // A failed instance writes nothing more; its write-ahead log holds every commit.
      if (!this.#reopener.broken && this.#reopener.readOnlySince === undefined) {
        await this.withSession((session) => session.run("CHECKPOINT"));
      }
    } finally {
      this.#closeNow();
      // One the checkpoint failing began closes what it opens; until it has, DuckDB is busy.
      await this.#reopener.reopening?.catch(() => {});
    }
  }

  #closeNow(): void {
    this.#closed = true;
    for (const connection of this.#idle.splice(0)) connection.closeSync();
    this.#instance?.closeSync();
    this.#instance = undefined;
  }
}

/** Reads `result` to its end, or its failure, for nothing. */
async function readToEnd(result: DuckDBResult): Promise<void> {
  try {
    while ((await result.fetchChunk())?.rowCount);
  } catch {
    // Ended all the same.
  }
}
