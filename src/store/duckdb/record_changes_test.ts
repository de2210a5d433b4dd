import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { Filter } from "../../catalog/filters.ts";
import { ApiError } from "../../errors.ts";
import type { ArrivingRows } from "../store.ts";
import type { DuckDBStore } from "./duckdb_store.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";
import { rowsInParts } from "../../../tests/helpers/rows.ts";
import { rejectsWith } from "../../../tests/helpers/api_error.ts";

const ref = { schema: "public", name: "things" };

const eq = (column: string, value: string): Filter => ({ column, op: "eq", negated: false, value });

async function things(store: DuckDBStore): Promise<void> {
  await store.tables.create(
    planTable(ref, {
      columns: [
        { name: "id", type: "integer" },
        { name: "data", type: "blob" },
        { name: "tags", type: "boolean[]" },
        { name: "doc", type: "json" },
        { name: "at", type: "timestamptz" },
        { name: "point", type: "struct(x integer, y integer)" },
        { name: "label", type: "varchar" },
      ],
      constraints: { primary_key: { columns: ["id"] } },
    }),
    { ifNotExists: false },
  );
  await store.database.withSession((s) => s.run(`INSERT INTO public.things (id) VALUES (1), (2)`));
}

async function row(store: DuckDBStore, id: number) {
  const { json } = await store.records.read(ref, 0, 100);
  return JSON.parse(json).find((r: { id: number }) => r.id === id);
}

Deno.test("DuckDBStore.updateRecords() casts JSON values as an insert reads them", async () => {
  await withTempStore(async (store) => {
    await things(store);
    const result = await store.records.update(ref, [
      { key: "data", json: '"aGk="' },
      { key: "tags", json: '["t", "false", 1]' },
      { key: "doc", json: '{"a": [1, 2.50]}' },
      { key: "at", json: '"2024-01-02T03:04:05+02:00"' },
      { key: "point", json: '{"x": 1, "y": 2}' },
      { key: "label", json: "12.50" },
    ], () => [eq("id", "1")]);
    assert.equal(result.updated, 1);
    assert.deepEqual(await row(store, 1), {
      id: 1,
      data: "aGk=",
      tags: [true, false, true],
      doc: { a: [1, 2.5] },
      at: "2024-01-02T01:04:05.000000Z",
      point: { x: 1, y: 2 },
      // A number for a text column is its JSON number's text, as read_json gives it.
      label: "12.5",
    });
    assert.equal((await row(store, 2)).label, null);
  });
});

Deno.test("DuckDBStore.updateRecords() refuses what an insert refuses, naming each column", async () => {
  await withTempStore(async (store) => {
    await things(store);
    const error = await rejectsWith(
      store.records.update(ref, [
        { key: "data", json: '"not base64!"' },
        { key: "tags", json: '["maybe"]' },
        { key: "at", json: '"2024-01-02T03:04:05+16:00"' },
        { key: "point", json: '{"x": "a"}' },
        { key: "label", json: '"fine"' },
      ], () => []),
      422,
    );
    assert.deepEqual(
      error.details?.map((d) => d.column),
      ["data", "tags", "at", "point"],
    );
    assert.equal((await row(store, 1)).label, null);
  });
});

Deno.test("DuckDBStore.updateRecords() answers a write-write conflict with 409, not 500", async () => {
  await withTempStore(async (store) => {
    await things(store);
    const answers = await Promise.allSettled(
      Array.from(
        { length: 8 },
        (_, i) =>
          store.records.update(ref, [{ key: "label", json: `"${i}"` }], () => [eq("id", "1")]),
      ),
    );
    for (const answer of answers) {
      if (answer.status === "rejected") {
        assert.ok(answer.reason instanceof ApiError, String(answer.reason));
        assert.equal(answer.reason.status, 409);
        assert.match(answer.reason.message, /was under way/);
      }
    }
    assert.ok(answers.some((a) => a.status === "fulfilled"));
  });
});

Deno.test("DuckDBStore.updateRecords() answers one key given to two rows at once with 409", async () => {
  await withTempStore(async (store) => {
    await things(store);
    // Each statement alone is fine; whichever reaches the key second (at its statement or
    // at its commit, as DuckDB checks) is refused.
    const answers = await Promise.allSettled(
      ["1", "2"].map((id) =>
        store.records.update(ref, [{ key: "id", json: "10" }], () => [eq("id", id)])
      ),
    );
    const statuses = answers.map((a) =>
      a.status === "fulfilled" ? 200 : (a.reason as ApiError).status
    );
    assert.deepEqual(statuses.sort(), [200, 409]);
  });
});

Deno.test("DuckDBStore changes that could orphan a row wait for writes into the tables referencing it", async () => {
  await withTempStore(async (store, dir) => {
    const customers = { schema: "public", name: "customers" };
    const orders = { schema: "public", name: "orders" };
    await store.tables.create(
      planTable(customers, {
        columns: [{ name: "id", type: "integer" }, { name: "name", type: "varchar" }],
        constraints: { primary_key: { columns: ["id"] } },
      }),
      { ifNotExists: false },
    );
    await store.tables.create(
      planTable(orders, {
        columns: [{ name: "id", type: "integer" }, { name: "customer_id", type: "integer" }],
        constraints: {
          primary_key: { columns: ["id"] },
          foreign_keys: [{
            column: "customer_id",
            reference_table: "customers",
            reference_column: "id",
          }],
        },
      }),
      { ifNotExists: false },
    );
    await store.database.withSession((s) =>
      s.run("INSERT INTO public.customers VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    );
    // An insert into orders loaded part by part, its transaction (and orders' shared lock)
    // held open while the rest of its body waits for `release`.
    const encode = (text: string) => new TextEncoder().encode(text);
    const rowsText = (from: number) =>
      JSON.stringify(Array.from({ length: 300 }, (_, i) => ({ id: from + i, customer_id: 1 })))
        .slice(1, -1);
    let release!: () => void;
    const released = new Promise<void>((resolve) => release = resolve);
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encode(`[${rowsText(0)},`));
        await released;
        controller.enqueue(encode(`${rowsText(1000)}]`));
        controller.close();
      },
    });
    const rows = rowsInParts(stream, dir);
    let loading!: () => void;
    const firstPart = new Promise<void>((resolve) => loading = resolve);
    const signalled: ArrivingRows = {
      async *parts() {
        for await (const part of rows.parts()) {
          loading();
          yield part;
        }
      },
      whole: () => rows.whole(),
      inMemory: () => rows.inMemory(),
    };
    const done: string[] = [];
    try {
      const inserting = store.records.insert(orders, signalled, "fail").then((r) => {
        done.push("insert");
        return r.inserted;
      });
      await firstPart;
      await new Promise((resolve) => setTimeout(resolve, 100));
      // DuckDB checks a foreign key only against what is committed when it looks: a delete
      // or key change beside an open insert into orders could pass its check and both
      // commit, leaving orders pointing nowhere. These wait for the insert.
      const deleting = store.records.delete(customers, () => [eq("id", "2")])
        .then(() => done.push("delete"));
      const rekeying = store.records.update(customers, [{ key: "id", json: "30" }], () => [
        eq("id", "3"),
      ]).then(() => done.push("key change"));
      // A change of other columns cannot break a foreign key, and does not wait.
      await store.records.update(customers, [{ key: "name", json: '"z"' }], () => [eq("id", "3")]);
      done.push("other change");
      release();
      assert.equal(await inserting, 600);
      await Promise.all([deleting, rekeying]);
      assert.deepEqual(done.slice(0, 2), ["other change", "insert"]);
      assert.deepEqual(done.slice(2).sort(), ["delete", "key change"]);
    } finally {
      await rows.discard();
    }
  });
});

// What the module relies on of DuckDB 1.5.5 itself, so an upgrade that changes it shows here.

Deno.test("DuckDB checks an UPDATE's keys when the statement ends: shifted and swapped keys pass", async () => {
  await withTempStore(async (store) => {
    const rows = await store.database.withSession(async (s) => {
      await s.run("CREATE TABLE k (id INTEGER PRIMARY KEY, u VARCHAR UNIQUE)");
      await s.run("INSERT INTO k VALUES (1, 'a'), (2, 'b'), (3, 'c')");
      await s.run("UPDATE k SET id = id + 1");
      await s.run("UPDATE k SET u = CASE u WHEN 'a' THEN 'b' WHEN 'b' THEN 'a' ELSE u END");
      await assert.rejects(s.run("UPDATE k SET u = 'z'"), /PRIMARY KEY or UNIQUE|Duplicate key/);
      return await s.rows("SELECT id, u FROM k ORDER BY id");
    });
    assert.deepEqual(rows, [{ id: 2, u: "b" }, { id: 3, u: "a" }, { id: 4, u: "c" }]);
  });
});

Deno.test("DuckDB lets a referenced row be deleted beside an open insert referencing it", async () => {
  // Why a change that could break a foreign key locks the referencing tables.
  await withTempStore(async (store) => {
    await store.database.withSession(async (s) => {
      await s.run("CREATE TABLE p (id INTEGER PRIMARY KEY)");
      await s.run("CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id))");
      await s.run("INSERT INTO p VALUES (1)");
    });
    await store.database.transaction(async (insert) => {
      await insert.run("INSERT INTO c VALUES (1, 1)");
      await store.database.transaction((remove) => remove.run("DELETE FROM p WHERE id = 1"));
    });
    const [row] = await store.database.withSession((s) =>
      s.rows("SELECT count(*) AS n FROM c WHERE pid NOT IN (SELECT id FROM p)")
    );
    assert.equal(Number(row!.n), 1, "an orphan: if this fails, DuckDB now prevents it");
  });
});
