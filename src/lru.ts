/**
 * A map that keeps at most a given number of entries and forgets the least recently used
 * first: what every bounded cache of the service keeps.
 *
 * @module
 */

/**
 * At most `most` entries; {@link get} and {@link set} make an entry the most recently used,
 * and {@link set} answers the entry it forgot, if any, for the caller to release.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Lru } from "./lru.ts";
 *
 * const kept = new Lru<string, number>(2);
 * kept.set("a", 1);
 * kept.set("b", 2);
 * kept.get("a");
 * assert.deepEqual(kept.set("c", 3), ["b", 2]);
 * assert.equal(kept.get("b"), undefined);
 * assert.equal(kept.get("a"), 1);
 * ```
 */
export class Lru<K, V> {
  // A Map keeps insertion order: the first entry is the least recently used.
  readonly #entries = new Map<K, V>();

  constructor(readonly most: number) {}

  /** The value under `key`, now the most recently used; undefined when none is kept. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  /** Keeps `value` under `key`; answers the entry forgotten to stay within the bound. */
  set(key: K, value: V): [K, V] | undefined {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size <= this.most) return undefined;
    const oldest = this.#entries.entries().next().value!;
    this.#entries.delete(oldest[0]);
    return oldest;
  }

  /** Forgets `key`. */
  delete(key: K): void {
    this.#entries.delete(key);
  }
}
