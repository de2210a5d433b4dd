/**
 * Backups of the whole database: taken on request or on a schedule while the service goes on,
 * listed, streamed and removed; and the restore of one at start-up.
 *
 * A backup is `<id>.duckdb` in the backup directory, `<id>` the UTC second it began
 * (`20261128T101500Z`). It is written under a hidden name and renamed once complete, so a
 * backup that failed or was killed is never listed; a scheduled one also has an empty
 * `<id>.scheduled` beside it, which is how the schedule knows which ones it may prune.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Store } from "../store/store.ts";

/** A backup as listed. */
export interface BackupInfo {
  readonly id: string;
  /** When it began, to the second (its id), ISO 8601 in UTC. */
  readonly time: string;
  readonly bytes: number;
  /** Whether the schedule took it (and may prune it), rather than a request. */
  readonly scheduled: boolean;
}

/** A backup just taken: what it is, and how long it took. */
export interface TakenBackup {
  readonly id: string;
  /** When it began, to the second (its id), ISO 8601 in UTC. */
  readonly time: string;
  readonly bytes: number;
  readonly seconds: number;
}

const ID = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const FILE = /^(\d{8}T\d{6}Z)\.duckdb$/;
/** What a backup is written as until it is complete (and DuckDB's log beside it). */
const PARTIAL = /^\.\d{8}T\d{6}Z\.duckdb\.partial(\.wal)?$/;
const MARKER = /^(\d{8}T\d{6}Z)\.scheduled$/;

/**
 * The id of a backup begun at `time`: its UTC second.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { backupId } from "./backups.ts";
 *
 * assert.equal(backupId(new Date("2026-11-28T10:15:00.250Z")), "20261128T101500Z");
 * ```
 */
export function backupId(time: Date): string {
  return time.toISOString().slice(0, 19).replaceAll(/[-:]/g, "") + "Z";
}

/** The moment an id names, ISO 8601. */
function timeOf(id: string): string {
  const [, y, mo, d, h, mi, s] = ID.exec(id)!;
  return `${y}-${mo}-${d}T${h}:${mi}:${s}Z`;
}

/**
 * The backups of a store whose engine can take them, kept in `dir`. One is taken at a time.
 */
export class Backups {
  #running: Promise<TakenBackup> | undefined;

  private constructor(
    private readonly store: Store & Required<Pick<Store, "backup">>,
    readonly dir: string,
    private readonly logger: Logger,
    private readonly now: () => Date,
  ) {}

  /**
   * The backups in `dir` (created if missing), after removing what backups that failed or
   * were killed left there; undefined when the engine takes no backups.
   */
  static async open(
    store: Store,
    dir: string,
    logger: Logger,
    now: () => Date = () => new Date(),
  ): Promise<Backups | undefined> {
    if (!store.backup) return undefined;
    await Deno.mkdir(dir, { recursive: true });
    const complete = new Set<string>();
    const markers: string[] = [];
    for await (const entry of Deno.readDir(dir)) {
      if (PARTIAL.test(entry.name)) await Deno.remove(`${dir}/${entry.name}`);
      else if (FILE.test(entry.name)) complete.add(FILE.exec(entry.name)![1]!);
      else if (MARKER.test(entry.name)) markers.push(entry.name);
    }
    // A marker is written before its backup is renamed into place: one alone is of a failure.
    for (const marker of markers) {
      if (!complete.has(MARKER.exec(marker)![1]!)) await Deno.remove(`${dir}/${marker}`);
    }
    return new Backups(store as Backups["store"], dir, logger, now);
  }

  /** Whether a backup is under way. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /**
   * Takes a backup and answers once it is complete; 409 while another is under way. With
   * `scheduled`, it is marked as the schedule's.
   */
  take(scheduled = false): Promise<TakenBackup> {
    if (this.#running) {
      throw ApiError.conflict("A backup is under way; try again when it has ended");
    }
    const running = this.#take(scheduled).finally(() => this.#running = undefined);
    this.#running = running;
    return running;
  }

  async #take(scheduled: boolean): Promise<TakenBackup> {
    let began = this.now();
    // Ids are seconds: a second backup within the same one waits for the next.
    while (await exists(this.#path(backupId(began)))) {
      await new Promise((resolve) => setTimeout(resolve, 1001 - began.getTime() % 1000));
      began = this.now();
    }
    const id = backupId(began);
    const partial = `${this.dir}/.${id}.duckdb.partial`;
    const marker = `${this.dir}/${id}.scheduled`;
    const start = performance.now();
    try {
      await this.store.backup(partial);
      await syncFile(partial);
      if (scheduled) await Deno.writeFile(marker, new Uint8Array());
      await Deno.rename(partial, this.#path(id));
      await syncFile(this.dir);
    } catch (error) {
      await Deno.remove(partial).catch(() => {});
      await Deno.remove(`${partial}.wal`).catch(() => {});
      await Deno.remove(marker).catch(() => {});
      throw error;
    }
    const seconds = Math.round(performance.now() - start) / 1000;
    const { size } = await Deno.stat(this.#path(id));
    this.logger.log("info", "backup taken", { id, bytes: size, seconds, scheduled });
    return { id, time: timeOf(id), bytes: size, seconds };
  }

  /** Every complete backup, newest first. */
  async list(): Promise<BackupInfo[]> {
    const ids: string[] = [];
    const scheduled = new Set<string>();
    for await (const entry of Deno.readDir(this.dir)) {
      const id = FILE.exec(entry.name)?.[1];
      if (id !== undefined && entry.isFile) ids.push(id);
      const marker = MARKER.exec(entry.name)?.[1];
      if (marker !== undefined) scheduled.add(marker);
    }
    const found: BackupInfo[] = [];
    for (const id of ids.sort().reverse()) {
      const stat = await Deno.stat(this.#path(id)).catch(() => undefined);
      if (!stat) continue; // Removed meanwhile.
      found.push({ id, time: timeOf(id), bytes: stat.size, scheduled: scheduled.has(id) });
    }
    return found;
  }

  /** The file of backup `id`, open for reading, and its length; 404 when there is none. */
  async open(id: string): Promise<{ file: Deno.FsFile; bytes: number }> {
    const path = this.#existing(id);
    try {
      const file = await Deno.open(path);
      return { file, bytes: (await file.stat()).size };
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) throw notFound(id);
      throw error;
    }
  }

  /** Removes backup `id`; 404 when there is none. */
  async remove(id: string): Promise<void> {
    const path = this.#existing(id);
    try {
      await Deno.remove(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) throw notFound(id);
      throw error;
    }
    await Deno.remove(`${this.dir}/${id}.scheduled`).catch(() => {});
  }

  /**
   * Takes a backup every `intervalMs`, then removes the schedule's own beyond the newest
   * `keep` (those taken on request stay). A failure is logged and the schedule goes on.
   * Returns what stops it, waiting for a backup under way.
   */
  schedule(intervalMs: number, keep: number): () => Promise<void> {
    let current: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      if (this.#running) {
        this.logger.log("warn", "scheduled backup skipped: another is under way");
        return;
      }
      current = this.take(true)
        .then(() => this.#prune(keep))
        .catch((error) =>
          this.logger.log("error", "scheduled backup failed", {
            error: error instanceof Error ? error.message : String(error),
          })
        );
    }, intervalMs);
    return async () => {
      clearInterval(timer);
      await current;
    };
  }

  async #prune(keep: number): Promise<void> {
    const scheduled = (await this.list()).filter((backup) => backup.scheduled);
    for (const old of scheduled.slice(keep)) await this.remove(old.id);
  }

  #path(id: string): string {
    return `${this.dir}/${id}.duckdb`;
  }

  /** The path of backup `id`, which may be gone; 404 for an id no backup could have. */
  #existing(id: string): string {
    if (!ID.test(id)) throw notFound(id);
    return this.#path(id);
  }
}

function notFound(id: string): ApiError {
  return ApiError.notFound(`No backup "${id}"`);
}

/** The answer of every backup route on an engine that takes none. */
export function noBackups(): ApiError {
  return ApiError.notImplemented(
    "Backups are taken by the service only on DuckDB; back up PostgreSQL with pg_dump " +
      "(see docs/operations.md)",
  );
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Flushes a file or directory to the disk. */
async function syncFile(path: string): Promise<void> {
  const file = await Deno.open(path);
  try {
    await file.sync();
  } finally {
    file.close();
  }
}

/** How restore checks and prepares DuckDB files (`checkBackupFile`, `settleFile`). */
export interface RestoreSteps {
  /** Throws with the reason the file cannot be served. */
  check(path: string): Promise<void>;
  /** Replays the file's log into it; fails when another process holds it. */
  settle(path: string): Promise<void>;
}

/**
 * Puts the backup at `source` in place of the database file at `target`, once it passed the
 * checks; the current file, if any, stays beside it as `<target>.before-restore-<id>`. Until
 * the last step (a rename) nothing at `target` has changed, so a failure or a kill at any
 * point leaves either the old database or the restored one. Returns the kept file's path.
 */
export async function restoreDatabase(
  target: string,
  source: string,
  steps: RestoreSteps,
  now: () => Date = () => new Date(),
): Promise<string | undefined> {
  await steps.check(source);
  const id = backupId(now());
  const incoming = `${target}.restoring`;
  const kept = `${target}.before-restore-${id}`;
  await Deno.remove(`${incoming}.wal`).catch(() => {});
  try {
    await Deno.copyFile(source, incoming);
    if (await exists(`${source}.wal`)) await Deno.copyFile(`${source}.wal`, `${incoming}.wal`);
    // One file, its log replayed into it: the rename below then moves all of it.
    await steps.settle(incoming);
    await syncFile(incoming);
    let keptPath: string | undefined;
    if (await exists(target)) {
      // The current database, its own log replayed, as one file: kept under a second name.
      await steps.settle(target);
      await Deno.link(target, kept);
      keptPath = kept;
    }
    await Deno.rename(incoming, target);
    await syncFile(target.includes("/") ? target.slice(0, target.lastIndexOf("/")) || "/" : ".");
    return keptPath;
  } finally {
    await Deno.remove(incoming).catch(() => {});
    await Deno.remove(`${incoming}.wal`).catch(() => {});
  }
}
