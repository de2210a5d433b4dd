/**
 * Pages of records kept between requests, per table, until the table may have changed.
 *
 * A page costs DuckDB a top-N over the table and a count (about 3 ms of a core for a
 * million rows), while the same first page is asked for again and again. Every change to a
 * table's rows or definition holds that table's lock (shared for appends and record changes,
 * exclusive for DDL and uploads) or its schema's exclusive lock, from before its transaction
 * begins until after it has committed or rolled back. So the lock set alone tells the cache
 * of every write, however it is made: {@link PageCache.locked} watches every take and release
 * of those locks, drops the table's pages, and a page read while such a lock was held, or
 * taken and let go, is not kept. No write path needs to know the cache exists.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import type { RecordsPage } from "../store.ts";
import type { LockMode } from "./locks.ts";
import { schemaLock, tableLock } from "./store_locks.ts";

/** Longest page text kept: pages of a few hundred rows, not exports by another name. */
const MAX_PAGE_CHARS = 256 * 1024;

/** Characters of page text kept in all; the oldest pages go first. */
const MAX_CHARS = 16 * 1024 * 1024;

interface Kept {
  readonly page: RecordsPage;
  readonly stamp: number;
}

/**
 * Pages by table and query. A page is kept only when no lock of its table (or its schema's
 * exclusive one) was held at any moment of its read, so it always equals what a fresh read
 * gives; it is dropped when such a lock is next taken.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PageCache } from "./page_cache.ts";
 * import { tableLock } from "./store_locks.ts";
 *
 * const pages = new PageCache();
 * const ref = { schema: "public", name: "t" };
 * const stamp = pages.stamp(ref);
 * pages.keep(ref, "limit=10", stamp, { json: "[]", total: 0 });
 * assert.deepEqual(pages.get(ref, "limit=10"), { json: "[]", total: 0 });
 * pages.locked(tableLock(ref, "shared").key, "shared", true);
 * assert.equal(pages.get(ref, "limit=10"), undefined);
 * ```
 */
export class PageCache {
  /** Counts takes and releases; a stamp is its value when a read began. */
  #clock = 0;
  /** Holders of each lock key that counts, while held. */
  readonly #held = new Map<string, number>();
  /** The clock at each counting key's last take or release. */
  readonly #changed = new Map<string, number>();
  /** Pages by table lock key, then by query; both in order of use, oldest first. */
  readonly #pages = new Map<string, { schema: string; pages: Map<string, Kept> }>();
  #chars = 0;

  /**
   * Notes that `key` was taken (`taking`) or let go in `mode`: the lock set calls it for
   * every lock. A table's lock in any mode, or a schema's exclusive one, drops the pages it
   * covers and makes reads under way not keep theirs.
   */
  locked(key: string, mode: LockMode, taking: boolean): void {
    const schema = key.startsWith("schema:");
    if (schema && mode !== "exclusive") return;
    if (!schema && !key.startsWith("table:")) return;
    this.#clock++;
    this.#changed.set(key, this.#clock);
    const holders = (this.#held.get(key) ?? 0) + (taking ? 1 : -1);
    if (holders > 0) this.#held.set(key, holders);
    else this.#held.delete(key);
    if (!schema) this.#drop(key);
    else {
      for (const [table, entry] of this.#pages) if (entry.schema === key) this.#drop(table);
    }
  }

  /**
   * A stamp to read `ref`'s page with, for {@link keep}; undefined while a change may be
   * committing (a lock of the table is held), when the page must not be kept.
   */
  stamp(ref: TableRef): number | undefined {
    const { table, schema } = keys(ref);
    return this.#held.has(table) || this.#held.has(schema) ? undefined : this.#clock;
  }

  /** The kept page of `ref` for `query`, when nothing may have changed the table since. */
  get(ref: TableRef, query: string): RecordsPage | undefined {
    const { table } = keys(ref);
    const entry = this.#pages.get(table);
    const kept = entry?.pages.get(query);
    if (!entry || !kept || !this.#unchangedSince(ref, kept.stamp)) return undefined;
    // Most recently used last, so the oldest go first.
    entry.pages.delete(query);
    entry.pages.set(query, kept);
    this.#pages.delete(table);
    this.#pages.set(table, entry);
    return kept.page;
  }

  /** Keeps `page`, read from `stamp` on, when no lock of the table was taken since. */
  keep(ref: TableRef, query: string, stamp: number | undefined, page: RecordsPage): void {
    if (stamp === undefined || !this.#unchangedSince(ref, stamp)) return;
    const chars = page.json.length + query.length;
    if (chars > MAX_PAGE_CHARS) return;
    const { table, schema } = keys(ref);
    let entry = this.#pages.get(table);
    if (!entry) {
      entry = { schema, pages: new Map() };
      this.#pages.set(table, entry);
    }
    const old = entry.pages.get(query);
    if (old) this.#chars -= old.page.json.length + query.length;
    entry.pages.set(query, { page: Object.freeze({ ...page }), stamp });
    this.#chars += chars;
    this.#evict();
  }

  #unchangedSince(ref: TableRef, stamp: number): boolean {
    const { table, schema } = keys(ref);
    return (this.#changed.get(table) ?? 0) <= stamp && (this.#changed.get(schema) ?? 0) <= stamp;
  }

  #drop(table: string): void {
    const entry = this.#pages.get(table);
    if (!entry) return;
    for (const [query, kept] of entry.pages) this.#chars -= kept.page.json.length + query.length;
    this.#pages.delete(table);
  }

  #evict(): void {
    for (const [table, entry] of this.#pages) {
      for (const [query, kept] of entry.pages) {
        if (this.#chars <= MAX_CHARS) return;
        this.#chars -= kept.page.json.length + query.length;
        entry.pages.delete(query);
      }
      if (entry.pages.size === 0) this.#pages.delete(table);
    }
  }
}

/** The lock keys that cover `ref`: its table's, and its schema's. */
function keys(ref: TableRef): { table: string; schema: string } {
  return { table: tableLock(ref, "shared").key, schema: schemaLock(ref.schema, "exclusive").key };
}
