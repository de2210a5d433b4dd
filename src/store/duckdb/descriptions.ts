/**
 * Table descriptions kept between requests. Describing a table takes several catalog
 * queries, which cost more than a small insert itself, while definitions change rarely.
 * One process owns the database file, so every change passes through {@link
 * Descriptions.changing}, which drops the descriptions the change may alter when it starts
 * and again when it has committed or rolled back; the others stay.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";

/** What a change touches, for {@link Descriptions.changing}. */
export interface ChangeScope<T> {
  /** Whether the change may alter `table`'s description; when absent, any table's. */
  readonly affects?: (table: Table) => boolean;
  /**
   * The descriptions, by key, of the tables the change left, as its own transaction read
   * them after its work: kept when no other change ran meanwhile, so that a read right after
   * a change needs no catalog query.
   */
  readonly leaves?: (result: T) => readonly (readonly [string, Table])[];
}

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
   * Without `since` an entry is always current: a change that may alter it drops it when the
   * change starts, and nothing is cached while a change is under way. `since`, a {@link
   * stamp} taken before the snapshot `read` reads in began, keeps the answer to that
   * snapshot: an entry cached after a change that committed since would be newer than the
   * snapshot, so the cache is used only when nothing changed since.
   */
  async get(key: string, read: () => Promise<Table>, since?: number): Promise<Table> {
    const current = since === undefined || this.unchangedSince(since);
    const hit = current ? this.#entries.get(key) : undefined;
    if (hit) return hit;
    const stamp = since ?? this.stamp();
    const described = await read();
    if (this.unchangedSince(stamp)) this.#entries.set(key, deepFreeze(described));
    return described;
  }

  /**
   * Runs `change`, a change to table definitions, with nothing it `affects` cached across it,
   * and then keeps what it `leaves` if it ran alone.
   */
  async changing<T>(change: () => Promise<T>, scope: ChangeScope<T> = {}): Promise<T> {
    const affects = scope.affects ?? (() => true);
    this.#changing++;
    this.#invalidate(affects);
    const started = this.#generation;
    let left: readonly (readonly [string, Table])[] = [];
    try {
      const result = await change();
      left = scope.leaves?.(result) ?? [];
      return result;
    } finally {
      // Kept only when no other change started or ended meanwhile: one that did may have
      // altered what this one read.
      const alone = this.#changing === 1 && this.#generation === started;
      this.#changing--;
      this.#invalidate(affects);
      if (alone) {
        for (const [key, table] of left) this.#entries.set(key, deepFreeze(table));
      }
    }
  }

  #invalidate(affects: (table: Table) => boolean): void {
    this.#generation++;
    for (const [key, table] of this.#entries) if (affects(table)) this.#entries.delete(key);
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

/** The key of a table's description in the cache. */
export function descriptionKey(ref: TableRef): string {
  // Keyed as names are matched, so that every spelling of a name finds the same entry.
  return `${nameKey(ref.schema)}\u0000${nameKey(ref.name)}`;
}

/** A table's description under its key, for the cache. */
export function described(table: Table): [string, Table] {
  return [descriptionKey(table), table];
}
