/**
 * Answers kept for `Idempotency-Key`s, as the API's middleware asks for them: how long one
 * counts, and the sweep of those past it that runs now and then beside a lookup.
 *
 * @module
 */

import type { KeptAnswer, Store } from "../store/store.ts";

/** How long an answer is kept for its key: a retry later than this runs anew. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** How often answers past their time are swept out; lookups ignore them anyway. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;

/** The kept answers of one store. */
export class KeptAnswers {
  #swept = -Infinity;

  constructor(private readonly store: Store) {}

  /**
   * The answer kept for `key` in `scope` within {@link IDEMPOTENCY_TTL_MS} of `at`, or
   * undefined; sweeps out the expired ones first when an hour has passed since the last sweep.
   */
  async find(scope: string, key: string, at: number): Promise<KeptAnswer | undefined> {
    const since = at - IDEMPOTENCY_TTL_MS;
    if (at - this.#swept >= SWEEP_EVERY_MS) {
      this.#swept = at;
      // Housekeeping only: a lookup never takes an expired answer.
      await this.store.answers.forget(since).catch(() => {});
    }
    return await this.store.answers.find(scope, key, since);
  }
}
