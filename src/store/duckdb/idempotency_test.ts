import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import { RowsInParts } from "../../ingest/spool.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";
import { openStore } from "./duckdb_store.ts";
import type { KeyedWrite, OnConflict } from "../store.ts";
import { rowsInParts } from "../../../tests/helpers/rows.ts";

const REF = { schema: "public", name: "keyed" };

/** A key whose answer cannot be kept: keeping it throws inside the write's transaction. */
function unkeepable<R>(key: string): KeyedWrite<R> {
  return {
    scope: "tester",
    key,
    at: Date.now(),
    since: 0,
    fingerprint: () => "f",
    answer: () => {
      throw new Error("The answer could not be kept");
    },
  };
}

/** Rows as a body arriving in chunks, spooled in parts of `partBytes`. */
function arriving(dir: string, count: number, partBytes: number): RowsInParts {
  const rows = Array.from({ length: count }, (_, i) => ({ id: i, note: `row ${i}` }));
  const bytes = new TextEncoder().encode(JSON.stringify(rows));
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at += 1000));
    },
  });
  return rowsInParts(body, dir, partBytes);
}

Deno.test("insertRecords() keeps a key in the rows' own transaction: no row stays when the key cannot be kept", async () => {
  await withTempStore(async (store, dir) => {
    const plan = planTable(REF, {
      columns: [{ name: "id", type: "bigint" }, { name: "note", type: "text" }],
      constraints: { primary_key: { columns: ["id"] } },
    });
    await store.tables.create(plan, { ifNotExists: false });
    const cases: [string, number, number, OnConflict][] = [
      ["a small body, grouped and appended", 10, Infinity, "fail"],
      ["a body loaded part by part while it arrives", 2000, 4096, "fail"],
      ["a body loaded whole", 2000, Infinity, "skip"],
    ];
    for (const [what, count, partBytes, onConflict] of cases) {
      const rows = arriving(dir, count, partBytes);
      try {
        await assert.rejects(store.records.insert(REF, rows, onConflict, unkeepable(what)), what);
      } finally {
        await rows.discard();
      }
      assert.equal((await store.records.read(REF, 0, 1)).total, 0, what);
      assert.equal(await store.answers.find("tester", what, 0), undefined, what);
    }
  });
});

Deno.test("createTable() and dropTable() keep a key in their own transaction", async () => {
  await withTempStore(async (store) => {
    const plan = planTable(REF, { columns: [{ name: "id", type: "bigint" }] });
    await assert.rejects(store.tables.create(plan, { ifNotExists: false, keyed: unkeepable("c") }));
    await assert.rejects(store.tables.get(REF), /does not exist/);
    await store.tables.create(plan, { ifNotExists: false });
    await assert.rejects(store.tables.drop(REF, unkeepable("d")));
    assert.equal((await store.tables.get(REF)).name, REF.name);
  });
});

Deno.test("keptAnswer() finds a kept answer after the store is opened again, and not once forgotten", async () => {
  const dir = await Deno.makeTempDir();
  const options = { path: `${dir}/t.duckdb`, spoolDir: dir, tempDir: dir };
  try {
    const keyed: KeyedWrite<string> = {
      scope: "tester",
      key: "k",
      at: 1000,
      since: 0,
      fingerprint: () => "f",
      answer: (name) => ({ status: 200, body: { schema: name } }),
    };
    const first = await openStore(options);
    await first.schemas.create("s", keyed);
    assert.equal(await first.answers.find("tester", "other", 0), undefined);
    await first.close();
    const again = await openStore(options);
    try {
      assert.deepEqual(await again.answers.find("tester", "k", 1000), {
        fingerprint: "f",
        answer: { status: 200, body: { schema: "s" } },
      });
      assert.equal(await again.answers.find("tester", "k", 1001), undefined);
      await again.answers.forget(1001);
      assert.equal(await again.answers.find("tester", "k", 0), undefined);
    } finally {
      await again.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
