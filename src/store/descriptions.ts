/**
 * Table descriptions kept between requests. Describing a table takes several catalog
 * queries, which cost more than a small insert itself, while definitions change rarely.
 * One process owns the database file, so every change passes through {@link
 * Descriptions.changing}, which empties the cache when the change starts and again when it
 * has committed or rolled back.
 *
 * @module
 */

import type { Table } from "../catalog/model.ts";

/**
 * Described tables by name key. An entry is stored only when no change started or ended
 * while it was being read, so it always equals what a fresh read would give.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Descriptions } from "./descriptions.ts";
 *
 * const cache = new Descriptions();
 * let reads = 0;
 * const read = () => {
 *   reads++;
 *   const constraints = { primary_key: null, unique: [], foreign_keys: [] };
 *   return Promise.resolve({ name: "t", schema: "public", columns: [], constraints });
 * };
 * await cache.get("public.t", read);
 * await cache.get("public.t", read);
 * assert.equal(reads, 1);
 * await cache.changing(() => Promise.resolve());
 * await cache.get("public.t", read);
 * assert.equal(reads, 2);
 * ```
 */
export class Descriptions {
  readonly #entries = new Map<string, Table>();
  /** Bumped when a change starts and when it ends. */
  #generation = 0;
  /** Changes under way. */
  #changing = 0;

  /**
   * A stamp for {@link unchangedSince} and {@link get}: the generation, or while a change is
   * under way (it may commit at any moment) -1, which no generation equals.
   */
  stamp(): number {
    return this.#changing > 0 ? -1 : this.#generation;
  }

  /** Whether no change was under way at any moment since `stamp` was taken. */
  unchangedSince(stamp: number): boolean {
    return stamp === this.#generation;
  }

  /**
   * The cached description under `key`, or `read`'s, cached when nothing changed meanwhile.
   * `since`, a {@link stamp} taken before the snapshot `read` reads in began, keeps the
   * answer to that snapshot: an entry cached after a change that committed since would be
   * newer than the snapshot, so the cache is used only when nothing changed since.
   */
  async get(key: string, read: () => Promise<Table>, since = this.stamp()): Promise<Table> {
    const hit = this.unchangedSince(since) ? this.#entries.get(key) : undefined;
    if (hit) return hit;
    const described = await read();
    if (this.unchangedSince(since)) this.#entries.set(key, deepFreeze(described));
    return described;
  }

  /** Runs `change`, a change to any table's definition, with nothing cached across it. */
  async changing<T>(change: () => Promise<T>): Promise<T> {
    this.#changing++;
    this.#invalidate();
    try {
      return await change();
    } finally {
      this.#changing--;
      this.#invalidate();
    }
  }

  #invalidate(): void {
    this.#generation++;
    this.#entries.clear();
  }
}

/** `value` made read-only all the way down: cached descriptions are shared by requests. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
