/**
 * Reopening a DuckDB instance that failed (as on a full disk), and opening read-write again
 * a file that had to be reopened read-only: what {@link Database} does about its instance
 * between units of work.
 *
 * @module
 */

import type { DuckDBInstance } from "@duckdb/node-api";
import { ApiError } from "../../errors.ts";
import { type DatabaseOptions, openInstance } from "./database_open.ts";

/**
 * Longest new work waits for a failed instance to be reopened before it fails with the cause.
 * A unit asking for a second connection of its own while the instance failed waits this long
 * for itself, then fails, and so lets the reopen go on.
 */
const REOPEN_WAIT_MS = 1000;

/** Least milliseconds between tries to open read-write again a file opened read-only. */
const READ_ONLY_RETRY_MS = 1000;

/**
 * Longest new work waits, at such a try, for the work under way to end: the instance can only
 * be closed once none holds it. Work longer than that (an export, say) puts the try off.
 */
const READ_ONLY_DRAIN_MS = 250;

/** What the reopening needs of the database whose instance it reopens. */
export interface Held {
  /** Units of work holding a connection now. */
  activeWork(): number;
  isClosed(): boolean;
  /** Closes the idle connections and the instance, which is then none until the next. */
  closeInstance(): void;
  /** Takes the instance just opened. */
  useInstance(instance: DuckDBInstance): void;
}

/** The state of a failed or read-only instance, and the work of opening it again. */
export class Reopener {
  /** Set while the instance is invalidated: what work meets until it is reopened. */
  broken: ApiError | undefined;
  /** When the instance was opened read-only because the disk was full, that time. */
  readOnlySince: number | undefined;
  #reopening: Promise<void> | undefined;
  /** Set while new work waits for the work under way to end, to open read-write again. */
  #draining: Promise<void> | undefined;
  /** Called when the last work under way ends, while something waits for that. */
  #onIdle: (() => void) | undefined;

  constructor(private readonly held: Held, private readonly options: DatabaseOptions) {}

  /** The reopen under way, if any: a close waits for it. */
  get reopening(): Promise<void> | undefined {
    return this.#reopening;
  }

  /**
   * Called when the last work under way has ended: what waited for that goes on, and a failed
   * instance is reopened now, not at the next request.
   */
  idle(): void {
    this.#onIdle?.();
    if (this.broken) this.reopen().catch(() => {});
  }

  /**
   * Waits for a failed instance to be reopened, at most {@link REOPEN_WAIT_MS}: the work still
   * on it has been interrupted and ends within moments, and new work (a read, which needs no
   * space on a full disk) is then served rather than refused. Past the wait, or when the file
   * cannot be reopened, it fails with the cause.
   */
  async reopened(): Promise<void> {
    const until = performance.now() + REOPEN_WAIT_MS;
    while (this.broken) {
      try {
        return await this.reopen();
      } catch (error) {
        // Refused only while work holds the instance; a failed reopen is final for now.
        if (this.held.activeWork() === 0 || this.held.isClosed() || performance.now() >= until) {
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  }

  /**
   * Tries, at most once a second, to open read-write again a file opened read-only. The
   * instance must be closed for that, so new work waits until none holds it: were the try
   * left for a moment with no work under way, overlapping requests would put it off for good.
   * Work still under way after READ_ONLY_DRAIN_MS puts it off a second instead, and new work
   * goes on read-only: a unit waiting for a second connection of its own must not wait for
   * itself, nor a read for a slow export.
   */
  writeAgainIfDue(): Promise<void> {
    if (this.#draining) return this.#draining;
    if (Date.now() - this.readOnlySince! < READ_ONLY_RETRY_MS) return Promise.resolve();
    this.#draining = this.#whenIdle(READ_ONLY_DRAIN_MS)
      .then(async (idle) => {
        if (idle) await this.reopen().catch(() => {}); // Read-only again, or failed: logged.
        else this.readOnlySince = Date.now();
      })
      .finally(() => this.#draining = undefined);
    return this.#draining;
  }

  /** Resolves true once no work holds the instance, false if some still does after `ms`. */
  #whenIdle(ms: number): Promise<boolean> {
    if (this.held.activeWork() === 0) return Promise.resolve(true);
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
   * Reopens a failed instance (or one opened read-only) once no work holds a connection to
   * it: DuckDB replays its write-ahead log, so every commit it acknowledged is there. Until
   * then this fails with the failure (new work waits in {@link Reopener.reopened}), and so
   * does work while the file cannot be reopened.
   */
  reopen(): Promise<void> {
    if (this.held.isClosed()) return Promise.reject(new Error("The database is closed"));
    if (this.held.activeWork() > 0) return Promise.reject(this.broken);
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
      this.held.closeInstance();
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
      if (this.held.isClosed()) return instance.closeSync(); // Shut down meanwhile.
      this.held.useInstance(instance);
      this.broken = undefined;
      this.readOnlySince = readOnly ? Date.now() : undefined;
      this.options.logger?.log(
        "warn",
        readOnly ? "database reopened read-only" : "database reopened",
      );
    } catch (error) {
      this.broken ??= ApiError.unavailable("The database failed and is being reopened", 1);
      this.options.logger?.log("error", "database could not be reopened", {
        error: error instanceof Error ? error.message : String(error),
      });
      throw ApiError.unavailable(
        "The database failed and cannot be reopened now; try again later",
        1,
      );
    }
  }
}
