import assert from "node:assert/strict";
import { beforeDeadline } from "../../deadline.ts";
import { setImmediate } from "node:timers";
import { GroupCommit } from "./group_commit.ts";

/** A GroupCommit whose groups each run until the test lets them finish. */
function controlled(gatherMs: number) {
  const groups: number[][] = [];
  const finishers: (() => void)[] = [];
  const commit = new GroupCommit<number, number>(
    async (members) => {
      groups.push([...members]);
      await new Promise<void>((resolve) => finishers.push(resolve));
      return members.map((m) => ({ status: "fulfilled" as const, value: m * 10 }));
    },
    { members: 100, size: 100, gatherMs },
    () => 1,
  );
  /** Lets the oldest running group finish, once it has started. */
  async function finish(): Promise<void> {
    while (finishers.length === 0) await new Promise((r) => setTimeout(r, 1));
    finishers.shift()!();
  }
  return { commit, groups, finish };
}

/** Settles with `promise`, or fails once `ms` pass: a wait of a minute shows as a failure. */
function within<T>(promise: Promise<T>, ms = 5_000): Promise<T> {
  return beforeDeadline(promise, ms, () => new Error(`still waiting after ${ms} ms`));
}

Deno.test("the next group waits for the members the last group and its queue had", async () => {
  const { commit, groups, finish } = controlled(60_000);
  const first = commit.submit("k", 1);
  const queued = [commit.submit("k", 2), commit.submit("k", 3)];
  await finish();
  assert.equal(await first, 10);
  // Three were about ([1] ran, [2, 3] queued): the next group waits for a third member.
  const late = commit.submit("k", 4);
  await finish();
  assert.deepEqual(await within(Promise.all([...queued, late])), [20, 30, 40]);
  assert.deepEqual(groups, [[1], [2, 3, 4]]);

  // The three are expected back: arriving in any order, they make one group, not 5 alone.
  const again = [5, 6, 7].map((m) => commit.submit("k", m));
  await finish();
  assert.deepEqual(await within(Promise.all(again)), [50, 60, 70]);
  assert.deepEqual(groups, [[1], [2, 3, 4], [5, 6, 7]]);
});

Deno.test("a gathering group starts with the members it has when its time is up", async () => {
  const { commit, groups, finish } = controlled(20);
  const all = [1, 2, 3].map((m) => commit.submit("k", m));
  await finish();
  await finish();
  assert.deepEqual(await within(Promise.all(all)), [10, 20, 30]);
  assert.deepEqual(groups, [[1], [2, 3]]);
});

Deno.test("a lone writer never waits, however long groups may gather", async () => {
  const { commit, groups, finish } = controlled(60_000);
  for (const m of [1, 2, 3]) {
    const answer = commit.submit("k", m);
    await finish();
    assert.equal(await within(answer), m * 10);
  }
  assert.deepEqual(groups, [[1], [2], [3]]);
});

Deno.test("a key that gathers holds up no other key", async () => {
  const { commit, groups, finish } = controlled(60_000);
  const a = [commit.submit("a", 1), commit.submit("a", 2)];
  const b = commit.submit("b", 3);
  await finish();
  // Key a now gathers a second member for [2]; key b runs and answers meanwhile.
  await finish();
  assert.equal(await within(b), 30);
  assert.deepEqual(groups, [[1], [3]]);
  const late = commit.submit("a", 4);
  await finish();
  assert.deepEqual(await within(Promise.all([...a, late])), [10, 20, 40]);
  assert.deepEqual(groups, [[1], [3], [2, 4]]);
});

Deno.test("a group that never yields counts what arrived while it ran before answering", async () => {
  const groups: number[][] = [];
  const commit = new GroupCommit<number, number>(
    (members) => {
      groups.push([...members]);
      // Others' requests reach the event loop while this group holds the thread; they are
      // read only at its next turn.
      if (members[0] === 1) {
        setImmediate(() => {
          void commit.submit("k", 2);
          void commit.submit("k", 3);
        });
      }
      return Promise.resolve(members.map((m) => ({ status: "fulfilled" as const, value: m })));
    },
    { members: 100, size: 100, gatherMs: 60_000 },
    () => 1,
  );
  // The first writer sends again as soon as it is answered.
  await commit.submit("k", 1);
  await within(commit.submit("k", 4));
  // Three writers were about, so the group after [1] waited for all three.
  assert.deepEqual(groups, [[1], [2, 3, 4]]);
});
