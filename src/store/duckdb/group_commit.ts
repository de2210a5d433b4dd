/**
 * Group commit: small writes that arrive while an earlier one runs are carried out together,
 * so many concurrent requests share one statement and one commit instead of queueing for
 * one each.
 *
 * @module
 */

import { setImmediate } from "node:timers";

/** How big a group may grow. */
export interface GroupLimits {
  /** Most members in one group. */
  readonly members: number;
  /** Most total size (as `sizeOf` counts it) in one group; a group has at least one member. */
  readonly size: number;
  /**
   * Most milliseconds a group waits for the members it expects (see {@link GroupCommit});
   * 0 never waits.
   */
  readonly gatherMs: number;
}

interface Pending<M, R> {
  readonly member: M;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/** The members of one key waiting for their group, and what the next group waits for. */
interface Queue<M, R> {
  readonly members: Pending<M, R>[];
  /** While the next group gathers: how many members it waits for, and its wake-up. */
  wanted?: { readonly count: number; readonly gathered: () => void };
}

/**
 * Queues members by key; one group per key runs at a time. A member with no group of its
 * key running starts one at once, so nothing waits when the service is idle; members
 * arriving meanwhile wait and then run together as the next group, up to the limits. `run`
 * settles each member of a group on its own.
 *
 * Clients that send their next write when the last one is answered would otherwise split
 * into cohorts that take turns: while one group runs, the clients of the group before it
 * queue up, and the clients it answers miss the group that starts next. So, like
 * PostgreSQL's `commit_delay`, the next group waits up to `gatherMs` for as many members
 * as were about (the last group's and those queued behind it), and starts as soon as they
 * are there. A lone client is never held up for others: after a group of one, nothing waits
 * but the one turn of the event loop a group takes before answering when none are queued
 * (see #drain).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GroupCommit } from "./group_commit.ts";
 *
 * const groups: number[][] = [];
 * const commit = new GroupCommit<number, number>(async (members) => {
 *   groups.push([...members]);
 *   await new Promise((r) => setTimeout(r, 5));
 *   return members.map((m) => ({ status: "fulfilled" as const, value: m * 10 }));
 * }, { members: 100, size: 100, gatherMs: 0 }, () => 1);
 * const results = await Promise.all([1, 2, 3].map((m) => commit.submit("k", m)));
 * assert.deepEqual(results, [10, 20, 30]);
 * assert.deepEqual(groups, [[1], [2, 3]]);
 * ```
 */
export class GroupCommit<M, R> {
  /** Members waiting, by key; a key is present while a group of it runs or gathers. */
  readonly #queues = new Map<string, Queue<M, R>>();

  constructor(
    private readonly run: (members: readonly M[]) => Promise<readonly PromiseSettledResult<R>[]>,
    private readonly limits: GroupLimits,
    private readonly sizeOf: (member: M) => number,
  ) {}

  /** Runs `member` in a group of others with the same key; settles as `run` settles it. */
  submit(key: string, member: M): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const pending = { member, resolve, reject };
      const queue = this.#queues.get(key);
      if (!queue) {
        this.#queues.set(key, { members: [pending] });
        return void this.#drain(key);
      }
      queue.members.push(pending);
      if (queue.wanted && queue.members.length >= queue.wanted.count) queue.wanted.gathered();
    });
  }

  /** Runs groups of `key` until no member is queued or expected, then forgets the key. */
  async #drain(key: string): Promise<void> {
    const queue = this.#queues.get(key)!;
    const waiting = queue.members;
    // The first group starts at once; later ones expect as many members as were about.
    let expected = 1;
    for (;;) {
      if (waiting.length < expected && expected > 1) await this.#gather(queue, expected);
      if (waiting.length === 0) break;
      const group = this.#nextGroup(waiting);
      let outcomes: readonly PromiseSettledResult<R>[];
      try {
        outcomes = await this.run(group.map((p) => p.member));
      } catch (reason) {
        // A group that throws fails each of its members with that error.
        outcomes = group.map(() => ({ status: "rejected", reason }));
      }
      // A group that never gave up the thread (the appender's flush is synchronous) saw
      // nothing arrive while it ran: before answering its members, whose clients could send
      // again at once, let the event loop read what came meanwhile from others, so they
      // are counted. A turn, not a timer: setTimeout(0) takes 2 ms.
      if (waiting.length === 0) await new Promise((resolve) => setImmediate(resolve));
      group.forEach((pending, i) => {
        const outcome = outcomes[i];
        if (outcome?.status === "fulfilled") pending.resolve(outcome.value);
        else pending.reject(outcome ? outcome.reason : new Error("The group lost a member"));
      });
      expected = Math.min(this.limits.members, group.length + waiting.length);
    }
    this.#queues.delete(key);
  }

  /** Waits until `count` members are queued, or `gatherMs` at most. */
  #gather(queue: Queue<M, R>, count: number): Promise<void> {
    if (this.limits.gatherMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const gathered = () => {
        clearTimeout(timer);
        queue.wanted = undefined;
        resolve();
      };
      const timer = setTimeout(gathered, this.limits.gatherMs);
      queue.wanted = { count, gathered };
    });
  }

  /** Takes the longest run of queued members within the limits (at least one). */
  #nextGroup(queue: Pending<M, R>[]): Pending<M, R>[] {
    let count = 0;
    let size = 0;
    while (count < queue.length && count < this.limits.members) {
      const next = this.sizeOf(queue[count]!.member);
      if (count > 0 && size + next > this.limits.size) break;
      size += next;
      count++;
    }
    return queue.splice(0, count);
  }
}
