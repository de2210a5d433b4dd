import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import { ApiError } from "../../errors.ts";
import type { DuckDBStore } from "./duckdb_store.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";
import { Session } from "./database.ts";
import { rowsInParts, watched } from "../../../tests/helpers/rows.ts";

const REF = { schema: "public", name: "arriving" };

/** A body of `rows` (its closing bracket replaced by `tail` when given), sent in chunks. */
function body(rows: readonly unknown[], tail = ""): ReadableStream<Uint8Array> {
  const text = JSON.stringify(rows);
  const bytes = new TextEncoder().encode(tail ? text.slice(0, -1) + tail : text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at += 1000));
    },
  });
}

/** Inserts a body spooled in 4 KiB parts, noting how many parts and whether the whole body was asked for. */
async function insert(store: DuckDBStore, dir: string, stream: ReadableStream<Uint8Array>) {
  const spooled = rowsInParts(stream, dir);
  const { rows, asked: seen } = watched(spooled);
  try {
    return { result: await store.records.insert(REF, rows, "fail"), seen };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { error, seen };
  } finally {
    await spooled.discard();
  }
}

/** A store of its own holding the table REF, for `work`. */
function withStore(work: (store: DuckDBStore, dir: string) => Promise<void>): Promise<void> {
  return withTempStore(async (store, dir) => {
    await store.tables.create(
      planTable(REF, {
        columns: [
          { name: "id", type: "bigint", is_nullable: false },
          { name: "n", type: "integer" },
          { name: "note", type: "varchar" },
        ],
        constraints: { primary_key: { columns: ["id"] } },
      }),
      { ifNotExists: false },
    );
    await work(store, dir);
  });
}

function many(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({ id: i, n: i % 7 }));
}

Deno.test("insertRecords() loads a large body part by part while it arrives", async () => {
  await withStore(async (store, dir) => {
    const { result, seen } = await insert(store, dir, body(many(3000)));
    assert.equal(result?.inserted, 3000);
    assert.ok(seen.parts > 5, `${seen.parts} parts`);
    assert.equal(seen.whole, false, "the whole body was not needed");
    assert.equal((await store.records.read(REF, 0, 1)).total, 3000);
    const left = [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".json"));
    assert.deepEqual(left, [], "discard() removed every part");
  });
});

Deno.test("insertRecords() answers failures in later parts with whole-body rows, changing nothing", async () => {
  await withStore(async (store, dir) => {
    // [what, rows, text in place of the closing bracket, status, the row a detail names]
    const cases: [string, unknown[], string, number, number | undefined][] = [];
    const badValue = many(3000);
    badValue[2500] = { id: 2500, n: "seven" };
    cases.push(["a bad value", badValue, "", 422, 2500]);
    const unknownKey = many(3000);
    unknownKey[2800] = { id: 2800, zzz: 1 };
    cases.push(["an unknown key past the sample", unknownKey, "", 422, 2800]);
    const duplicate = many(3000);
    duplicate[2900] = { id: 10, n: 1 };
    cases.push(["a key repeated across parts", duplicate, "", 409, 2900]);
    cases.push(["a body cut short", many(3000), ",{", 400, undefined]);
    for (const [label, rows, tail, status, row] of cases) {
      const { error, seen } = await insert(store, dir, body(rows, tail));
      assert.ok(error, `${label}: no error`);
      assert.equal(error.status, status, `${label}: ${error.message}`);
      if (row !== undefined) {
        assert.ok(
          error.details?.some((d) => d.row === row),
          `${label}: ${JSON.stringify(error.details)}`,
        );
      }
      // A body that fails to spool may be gone before its second part is asked for.
      if (status !== 400) assert.ok(seen.parts > 1, `${label}: loading began early`);
      assert.equal((await store.records.read(REF, 0, 1)).total, 0, `${label}: nothing changed`);
    }
  });
});

Deno.test("insertRecords() takes keys that first appear past the sample", async () => {
  await withStore(async (store, dir) => {
    const rows = many(3000).map((r, i) => i >= 2000 ? { ...r, note: `late ${i}` } : r);
    const { result, seen } = await insert(store, dir, body(rows));
    assert.equal(result?.inserted, 3000);
    assert.equal(seen.whole, true, "the late key sent the load down the whole-body path");
    const page = JSON.parse((await store.records.read(REF, 2999, 1)).json);
    assert.deepEqual(page, [{ id: 2999, n: 2999 % 7, note: "late 2999" }]);
  });
});

/** Counts the statements and appenders that insert grouped small bodies while `work` runs. */
async function countingGroups<T>(work: () => Promise<T>): Promise<{ result: T; groups: number }> {
  const { changes, appender } = Session.prototype;
  let groups = 0;
  Session.prototype.changes = function (this: Session, ...args) {
    groups++;
    return changes.apply(this, args);
  };
  Session.prototype.appender = function (this: Session, ...args) {
    groups++;
    return appender.apply(this, args);
  };
  try {
    return { result: await work(), groups };
  } finally {
    Object.assign(Session.prototype, { changes, appender });
  }
}

Deno.test("insertRecords() inserts small bodies arriving together in one statement", async () => {
  await withStore(async (store, dir) => {
    const bodies = Array.from({ length: 20 }, (_, i) => [{ id: 2 * i, n: i }, { id: 2 * i + 1 }]);
    const { result, groups } = await countingGroups(() =>
      Promise.all(bodies.map((rows) => insert(store, dir, body(rows))))
    );
    assert.deepEqual(result.map((r) => r.result?.inserted), bodies.map(() => 2));
    // The first body runs alone; the others arrive while it runs and go together, all
    // straight from memory through the appender.
    const filed = result.filter((r) => r.seen.whole).length;
    assert.equal(filed, 0, `${filed} of 20 bodies were written to a file`);
    assert.ok(groups >= 1 && groups <= 2, `${groups} group statements for 20 bodies`);
    // Every group gave its connection back.
    assert.equal(store.database.activeSessions, 0);
    const page = JSON.parse((await store.records.read(REF, 0, 100)).json);
    assert.equal(page.length, 40);
    assert.deepEqual(page[3], { id: 3, n: null, note: null });
  });
});

Deno.test("insertRecords() answers each small body of a failed group on its own", async () => {
  await withStore(async (store, dir) => {
    assert.equal((await insert(store, dir, body([{ id: 500, n: 1 }]))).result?.inserted, 1);
    const bodies: unknown[][] = Array.from({ length: 12 }, (_, i) => [{ id: i, n: i }]);
    bodies.push([{ id: 100, n: 1 }, { id: 101, n: "seven" }]); // a bad value
    bodies.push([{ id: 200, n: 1 }, { id: 500, n: 2 }]); // a key already in the table
    bodies.push([{ id: 300, n: 1 }], [{ id: 300, n: 2 }]); // two bodies with one key
    const { result, groups } = await countingGroups(() =>
      Promise.all(bodies.map((rows) => insert(store, dir, body(rows))))
    );
    assert.ok(groups < bodies.length, `${groups} insert statements: the bodies went together`);
    for (let i = 0; i < 12; i++) assert.equal(result[i]!.result?.inserted, 1, `body ${i}`);
    const [bad, existing, first, second] = result.slice(12);
    assert.equal(bad!.error?.status, 422);
    assert.deepEqual(bad!.error?.details?.map((d) => [d.row, d.column]), [[1, "n"]]);
    assert.equal(existing!.error?.status, 409);
    assert.deepEqual(existing!.error?.details?.map((d) => d.row), [1]);
    // Either of the two bodies sharing a key wins; the other is told which row clashed.
    const clash = [first!, second!];
    assert.equal(clash.filter((r) => r.result?.inserted === 1).length, 1);
    assert.deepEqual(clash.flatMap((r) => r.error?.details?.map((d) => d.row) ?? []), [0]);
    const ids = JSON.parse((await store.records.read(REF, 0, 100)).json).map((r: { id: number }) =>
      r.id
    );
    assert.deepEqual(ids, [...Array.from({ length: 12 }, (_, i) => i), 300, 500]);
  });
});
