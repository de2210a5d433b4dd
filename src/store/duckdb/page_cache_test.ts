import assert from "node:assert/strict";
import { LockSet } from "./locks.ts";
import { PageCache } from "./page_cache.ts";
import { appendLocks, schemaLock, tableLock } from "./store_locks.ts";

const ref = { schema: "public", name: "t" };
const other = { schema: "public", name: "u" };
const page = { json: '[{"id":1}]', total: 1 };

function cached(): { pages: PageCache; locks: LockSet } {
  const pages = new PageCache();
  return { pages, locks: new LockSet((key, mode, taking) => pages.locked(key, mode, taking)) };
}

Deno.test("PageCache.keep() keeps no page whose read overlapped a change of its table", async () => {
  const { pages, locks } = cached();
  const stamp = pages.stamp(ref);
  // A change that began and ended while the page was read.
  await locks.run(appendLocks(ref), () => Promise.resolve());
  pages.keep(ref, "q", stamp, page);
  assert.equal(pages.get(ref, "q"), undefined);
});

Deno.test("PageCache.stamp() gives none while a change holds the table's lock", async () => {
  const { pages, locks } = cached();
  await locks.run(appendLocks(ref), () => {
    assert.equal(pages.stamp(ref), undefined);
    pages.keep(ref, "q", pages.stamp(ref), page);
    return Promise.resolve();
  });
  assert.equal(pages.get(ref, "q"), undefined);
  assert.notEqual(pages.stamp(ref), undefined);
});

Deno.test("PageCache keeps a table's pages across changes of other tables only", async () => {
  const { pages, locks } = cached();
  pages.keep(ref, "q", pages.stamp(ref), page);
  // Another table's append takes the schema's lock too, shared: this table is untouched.
  await locks.run(appendLocks(other), () => Promise.resolve());
  assert.deepEqual(pages.get(ref, "q"), page);
  await locks.run([tableLock(ref, "exclusive")], () => Promise.resolve());
  assert.equal(pages.get(ref, "q"), undefined);
  pages.keep(ref, "q", pages.stamp(ref), page);
  await locks.run([schemaLock("PUBLIC", "exclusive")], () => Promise.resolve());
  assert.equal(pages.get(ref, "q"), undefined, "a schema's exclusive lock covers its tables");
});

Deno.test("PageCache finds a table under any spelling of its name, as its locks do", async () => {
  const { pages, locks } = cached();
  pages.keep(ref, "q", pages.stamp(ref), page);
  assert.deepEqual(pages.get({ schema: "Public", name: "T" }, "q"), page);
  await locks.run(appendLocks({ schema: "PUBLIC", name: "T" }), () => Promise.resolve());
  assert.equal(pages.get(ref, "q"), undefined);
});

Deno.test("PageCache keeps no page larger than 256 KiB and lets the oldest go past 16 MiB", () => {
  const pages = new PageCache();
  const big = { json: "x".repeat(256 * 1024 + 1) };
  pages.keep(ref, "big", pages.stamp(ref), big);
  assert.equal(pages.get(ref, "big"), undefined);
  const part = { json: "x".repeat(200 * 1024) };
  for (let i = 0; i < 100; i++) pages.keep(ref, `q${i}`, pages.stamp(ref), part);
  assert.equal(pages.get(ref, "q0"), undefined);
  assert.deepEqual(pages.get(ref, "q99"), part);
});
