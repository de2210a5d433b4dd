import assert from "node:assert/strict";
import type { Table } from "../../catalog/model.ts";
import { Descriptions } from "./descriptions.ts";

function described(column: string): Table {
  const constraints = { primary_key: null, unique: [], foreign_keys: [] };
  const columns = [{ id: 1, name: column, type: "INTEGER", default: null, is_nullable: true }];
  return { name: "t", schema: "public", columns, constraints };
}

Deno.test("Descriptions.unchangedSince() is false for a stamp taken while a change was under way", async () => {
  const cache = new Descriptions();
  let commit!: () => void;
  const change = cache.changing(() => new Promise<void>((resolve) => commit = resolve));
  // The change may already have committed in the database before it ends here.
  const stamp = cache.stamp();
  assert.equal(cache.unchangedSince(stamp), false);
  commit();
  await change;
  assert.equal(cache.unchangedSince(stamp), false);
  const quiet = cache.stamp();
  assert.equal(cache.unchangedSince(quiet), true);
});

Deno.test("Descriptions.get() with a stamp from before a change neither takes nor keeps a later entry", async () => {
  const cache = new Descriptions();
  const before = cache.stamp();
  await cache.changing(() => Promise.resolve());
  await cache.get("t", () => Promise.resolve(described("b")));
  // A snapshot begun before the change sees the old definition: the cached one is newer.
  assert.equal(
    (await cache.get("t", () => Promise.resolve(described("a")), before)).columns[0]!.name,
    "a",
  );
  assert.equal((await cache.get("t", () => Promise.resolve(described("c")))).columns[0]!.name, "b");
});

Deno.test("Descriptions.changing() drops only what the change affects, and keeps what it leaves when alone", async () => {
  const cache = new Descriptions();
  const other = { ...described("o"), name: "other" };
  await cache.get("other", () => Promise.resolve(other));
  await cache.changing(() => Promise.resolve(described("b")), {
    affects: (table) => table.name === "t",
    leaves: (table) => [["t", table]],
  });
  let reads = 0;
  const read = (column: string) => () => (reads++, Promise.resolve(described(column)));
  assert.equal((await cache.get("other", read("x"))).columns[0]!.name, "o");
  assert.equal((await cache.get("t", read("x"))).columns[0]!.name, "b");
  assert.equal(reads, 0);

  // Two changes overlap: neither keeps what it read, which the other may have changed since.
  let finish!: () => void;
  const first = cache.changing(() => new Promise<void>((resolve) => finish = resolve), {
    affects: (table) => table.name === "t",
    leaves: () => [["t", described("c")]],
  });
  await cache.changing(() => Promise.resolve(), { affects: () => false });
  finish();
  await first;
  assert.equal((await cache.get("t", read("d"))).columns[0]!.name, "d");
  assert.equal(reads, 1);
});
