/**
 * Keyed reader-writer locks that serialise DDL on one table (and on one schema) while
 * letting work on different tables run side by side.
 *
 * @module
 */

import type { LockMode, LockRequest } from "../shared/locks.ts";

export type { LockMode, LockRequest };

interface Waiter {
  readonly mode: LockMode;
  readonly grant: () => void;
}

interface LockState {
  shared: number;
  exclusive: boolean;
  readonly queue: Waiter[];
}

/**
 * A set of named reader-writer locks. Keys are always taken in sorted order, so two
 * callers asking for overlapping keys cannot deadlock; waiters are served first come,
 * first served.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LockSet } from "./locks.ts";
 *
 * const locks = new LockSet();
 * const order: string[] = [];
 * const first = locks.run([{ key: "t", mode: "exclusive" }], async () => {
 *   await new Promise((r) => setTimeout(r, 10));
 *   order.push("first");
 * });
 * const second = locks.run([{ key: "t", mode: "exclusive" }], () => {
 *   order.push("second");
 *   return Promise.resolve();
 * });
 * await Promise.all([first, second]);
 * assert.deepEqual(order, ["first", "second"]);
 * ```
 */
export class LockSet {
  readonly #locks = new Map<string, LockState>();

  /**
   * `watch`, when given, hears of every take and release of a key, as it happens: what
   * must know of every change (the page cache) learns it here, from the one place every
   * change passes.
   */
  constructor(private readonly watch?: (key: string, mode: LockMode, taking: boolean) => void) {}

  /** Runs `work` while holding every requested key. */
  async run<T>(requests: readonly LockRequest[], work: () => Promise<T>): Promise<T> {
    const wanted = new Map<string, LockMode>();
    for (const { key, mode } of requests) {
      if (wanted.get(key) !== "exclusive") wanted.set(key, mode);
    }
    const keys = [...wanted.keys()].sort();
    const held: string[] = [];
    try {
      for (const key of keys) {
        await this.#acquire(key, wanted.get(key)!);
        held.push(key);
      }
      return await work();
    } finally {
      for (const key of held.reverse()) this.#release(key, wanted.get(key)!);
    }
  }

  #acquire(key: string, mode: LockMode): Promise<void> {
    let state = this.#locks.get(key);
    if (!state) {
      state = { shared: 0, exclusive: false, queue: [] };
      this.#locks.set(key, state);
    }
    if (state.queue.length === 0 && compatible(state, mode)) {
      take(state, mode);
      this.watch?.(key, mode, true);
      return Promise.resolve();
    }
    const waiting = state;
    return new Promise((resolve) => waiting.queue.push({ mode, grant: resolve }));
  }

  #release(key: string, mode: LockMode): void {
    const state = this.#locks.get(key)!;
    if (mode === "exclusive") state.exclusive = false;
    else state.shared--;
    this.watch?.(key, mode, false);
    while (state.queue.length > 0 && compatible(state, state.queue[0]!.mode)) {
      const next = state.queue.shift()!;
      take(state, next.mode);
      this.watch?.(key, next.mode, true);
      next.grant();
    }
    if (!state.exclusive && state.shared === 0 && state.queue.length === 0) this.#locks.delete(key);
  }
}

function compatible(state: LockState, mode: LockMode): boolean {
  return mode === "shared" ? !state.exclusive : !state.exclusive && state.shared === 0;
}

function take(state: LockState, mode: LockMode): void {
  if (mode === "exclusive") state.exclusive = true;
  else state.shared++;
}
