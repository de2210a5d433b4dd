import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";
import type { QueryParam, QueryRequest } from "../store.ts";
import { Database } from "./database.ts";

function request(sql: string, params: QueryParam[] = []): QueryRequest {
  return { sql, params, defaultSchema: "public", timeoutMs: 30_000 };
}

/** `work`'s result and how many reads it streamed (a transaction with a description each). */
async function countingStreams<T>(work: () => Promise<T>): Promise<{ result: T; streams: number }> {
  const { streamLines } = Database.prototype;
  let streams = 0;
  Database.prototype.streamLines = function (this: Database, ...args) {
    streams++;
    return streamLines.apply(this, args);
  };
  try {
    return { result: await work(), streams };
  } finally {
    Database.prototype.streamLines = streamLines;
  }
}

Deno.test("readQuery() reads a query sent again in one statement, with the same answer", async () => {
  await withTempStore(async (store) => {
    const sql = "SELECT range AS n, 'row ' || range AS s FROM range(5) ORDER BY n DESC";
    const first = await countingStreams(() => store.readQuery(request(sql), 3));
    assert.equal(first.streams, 1);
    const again = await countingStreams(() => store.readQuery(request(sql), 3));
    assert.equal(again.streams, 0, "the second read described nothing");
    assert.deepEqual(again.result, first.result);
    assert.equal(first.result.truncated, true);
    assert.deepEqual(JSON.parse(first.result.json)[0], { n: 4, s: "row 4" });
  });
});

Deno.test("readQuery() describes a query again for parameters of other types", async () => {
  await withTempStore(async (store) => {
    const sql = "SELECT $1 AS v";
    const number = await store.readQuery(request(sql, [7]), 10);
    const text = await store.readQuery(request(sql, ["seven"]), 10);
    const again = await countingStreams(() => store.readQuery(request(sql, [8]), 10));
    assert.deepEqual(number.columns, [{ name: "v", type: "HUGEINT" }]);
    assert.deepEqual(text.columns, [{ name: "v", type: "VARCHAR" }]);
    assert.deepEqual(JSON.parse(text.json), [{ v: "seven" }]);
    assert.equal(again.streams, 0);
    assert.deepEqual(JSON.parse(again.result.json), [{ v: 8 }]);
  });
});

Deno.test("readQuery() answers a kept query by the table's new definition once it changed", async () => {
  await withTempStore(async (store) => {
    const ref = { schema: "public", name: "t" };
    const create = (type: string) =>
      store.createTable(planTable(ref, { columns: [{ name: "v", type }] }), {
        ifNotExists: false,
      });
    await create("integer");
    const sql = "SELECT * FROM t";
    assert.deepEqual((await store.readQuery(request(sql), 10)).columns, [
      { name: "v", type: "INTEGER" },
    ]);
    await store.readQuery(request(sql), 10);
    await store.dropTable(ref);
    await create("varchar");
    const changed = await countingStreams(() => store.readQuery(request(sql), 10));
    assert.equal(changed.streams, 1, "described again");
    assert.deepEqual(changed.result.columns, [{ name: "v", type: "VARCHAR" }]);
  });
});
