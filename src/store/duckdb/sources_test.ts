import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";
import type { ArrivingRows, RowsPart, RowsSource } from "../store.ts";
import type { DuckDBStore } from "./duckdb_store.ts";

const REF = { schema: "public", name: "streamed" };

/** Bytes given only as a stream: no local file for DuckDB to read in place. */
function streamOnly(text: string) {
  return { stream: () => new Blob([text]).stream() };
}

function summary(rows: number): RowsSummary {
  return {
    rows,
    form: "objects",
    keys: ["id", "name"],
    keysComplete: true,
    firstRowOfLength: new Map(),
    hasData: true,
  };
}

function lines(from: number, to: number): string {
  let text = "";
  for (let i = from; i < to; i++) text += JSON.stringify({ id: i, name: `n${i}` }) + "\n";
  return text;
}

async function createTable(store: DuckDBStore): Promise<void> {
  await store.tables.create(
    planTable(REF, {
      columns: [{ name: "id", type: "bigint", is_nullable: false }, { name: "name", type: "text" }],
      constraints: { primary_key: { columns: ["id"] } },
    }),
    { ifNotExists: false },
  );
}

/** The files in `dir` other than the database's own. */
async function spooled(dir: string): Promise<string[]> {
  const names = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.startsWith("t.duckdb")) names.push(entry.name);
  }
  return names;
}

Deno.test("uploadTable() loads rows given only as a stream, and leaves no file behind", async () => {
  await withTempStore(async (store, dir) => {
    const rows: RowsSource = { ...summary(3), ...streamOnly(lines(0, 3)) };
    const result = await store.records.upload(REF, rows, { ifExists: "fail" });
    assert.equal(result.inserted, 3);
    assert.deepEqual(result.table.columns.map((c) => c.name), ["id", "name"]);
    const { json, total } = await store.records.read(REF, 0, 10);
    assert.equal(total, 3);
    assert.deepEqual(JSON.parse(json)[2], { id: 2, name: "n2" });
    assert.deepEqual(await spooled(dir), []);
  });
});

Deno.test("uploadTable() reads a local file outside the spool directory from its stream", async () => {
  await withTempStore(async (store, dir) => {
    const elsewhere = await Deno.makeTempFile();
    try {
      await Deno.writeTextFile(elsewhere, lines(0, 2));
      const rows: RowsSource = { ...summary(2), ...streamOnly(lines(0, 2)), localFile: elsewhere };
      assert.equal((await store.records.upload(REF, rows, { ifExists: "fail" })).inserted, 2);
      assert.deepEqual(await spooled(dir), []);
    } finally {
      await Deno.remove(elsewhere);
    }
  });
});

Deno.test("uploadCsv() loads a CSV file given only as a stream", async () => {
  await withTempStore(async (store, dir) => {
    const csv = streamOnly("id,name\n1,a\n2,b\n");
    const result = await store.records.uploadCsv(REF, csv, { ifExists: "fail" });
    assert.equal(result.inserted, 2);
    assert.deepEqual(JSON.parse((await store.records.read(REF, 0, 10)).json), [
      { id: 1, name: "a" },
      { id: 2, name: "b" },
    ]);
    assert.deepEqual(await spooled(dir), []);
  });
});

Deno.test("insertRecords() loads a whole body given only as a stream", async () => {
  await withTempStore(async (store, dir) => {
    await createTable(store);
    const rows: ArrivingRows = {
      async *parts() {},
      whole: () => Promise.resolve({ ...summary(5), ...streamOnly(lines(0, 5)) }),
      inMemory: () => Promise.resolve(undefined),
    };
    assert.equal((await store.records.insert(REF, rows, "fail")).inserted, 5);
    assert.equal((await store.records.read(REF, 0, 1)).total, 5);
    assert.deepEqual(await spooled(dir), []);
  });
});

Deno.test("insertRecords() loads parts given only as streams while they arrive", async () => {
  await withTempStore(async (store, dir) => {
    await createTable(store);
    const parts: RowsPart[] = [
      { ...streamOnly(lines(0, 4)), progress: summary(4), last: false },
      { ...streamOnly(lines(4, 9)), progress: summary(9), last: true },
    ];
    const rows: ArrivingRows = {
      async *parts() {
        yield* parts;
      },
      whole: () => Promise.reject(new Error("The whole body was asked for")),
      inMemory: () => Promise.resolve(undefined),
    };
    assert.equal((await store.records.insert(REF, rows, "fail")).inserted, 9);
    assert.equal((await store.records.read(REF, 0, 1)).total, 9);
    assert.deepEqual(await spooled(dir), []);
  });
});
