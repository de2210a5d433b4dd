import assert from "node:assert/strict";
import { withTempStore } from "../../../tests/helpers/store.ts";
import { ApiError } from "../../errors.ts";
import type { QueryRequest } from "../store.ts";
import { DuckDBInstance } from "@duckdb/node-api";
import { fileStream } from "./result_formats.ts";

function request(sql: string, timeoutMs = 30_000): QueryRequest {
  return { sql, params: [], defaultSchema: "main", timeoutMs };
}

Deno.test("streamQuery() streams a JSON array across chunks, in the query's order", async () => {
  await withTempStore(async (store) => {
    const sql = "SELECT range AS n FROM range(5000) ORDER BY n DESC";
    const { columns, stream } = await store.queries.stream(request(sql), "json");
    assert.deepEqual(columns, [{ name: "n", type: "BIGINT" }]);
    const rows = JSON.parse(await new Response(stream).text()) as { n: number }[];
    assert.equal(rows.length, 5000);
    assert.deepEqual(rows.slice(0, 2), [{ n: 4999 }, { n: 4998 }]);
    assert.deepEqual(rows.at(-1), { n: 0 });
  });
});

Deno.test("streamQuery() answers an empty result as a header, nothing, or an empty array", async () => {
  await withTempStore(async (store) => {
    const sql = "SELECT range AS n, 'x' AS \"a b\" FROM range(0)";
    const text = async (format: "csv" | "ndjson" | "json") =>
      await new Response((await store.queries.stream(request(sql), format)).stream).text();
    assert.equal(await text("csv"), "n,a b\n");
    assert.equal(await text("ndjson"), "");
    assert.equal(await text("json"), "[]\n");
  });
});

Deno.test("streamQuery() writes Parquet to the spool directory and leaves nothing there", async () => {
  await withTempStore(async (store, dir) => {
    const { stream } = await store.queries.stream(request("SELECT 1 AS a, 2 AS a"), "parquet");
    const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "PAR1");
    const left = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) =>
      n.endsWith(".parquet")
    );
    assert.deepEqual(left, []);
  });
});

Deno.test("readQuery() answers at most limit rows and whether more followed; repeated names get a suffix", async () => {
  await withTempStore(async (store) => {
    const page = await store.queries.read(request("SELECT 1 AS a, 2 AS a FROM range(3)"), 2);
    assert.deepEqual(page.columns.map((c) => c.name), ["a", "a_1"]);
    assert.deepEqual(JSON.parse(page.json), [{ a: 1, a_1: 2 }, { a: 1, a_1: 2 }]);
    assert.equal(page.truncated, true);
    assert.equal((await store.queries.read(request("SELECT 1 AS a"), 1)).truncated, false);
  });
});

Deno.test("streamQuery() is 408 when its first rows take longer than the deadline", async () => {
  await withTempStore(async (store) => {
    const slow = request(
      "SELECT max(a.x + b.x) AS m FROM range(1000000) a(x), range(1000000) b(x)",
      300,
    );
    await assert.rejects(
      store.queries.stream(slow, "ndjson").then(({ stream }) => new Response(stream).text()),
      (error) => error instanceof ApiError && error.status === 408,
    );
    // The store goes on.
    const page = await store.queries.read(request("SELECT 42 AS n"), 1);
    assert.equal(page.json, '[{"n":42}]');
  });
});

Deno.test("streamQuery() does not count the time its client takes to read against the deadline", async () => {
  await withTempStore(async (store) => {
    const { stream } = await store.queries.stream(
      request("SELECT range AS x FROM range(300000)", 300),
      "ndjson",
    );
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    // A client slower than the deadline between two reads: the stream waits for it.
    await new Promise((resolve) => setTimeout(resolve, 600));
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    assert.equal(text.trimEnd().split("\n").length, 300_000);
  });
});

Deno.test("readQuery() is 408 past the deadline and 400 for an error of the query itself", async () => {
  await withTempStore(async (store) => {
    await assert.rejects(
      store.queries.read(
        request("SELECT count(*) FROM range(1000000) a, range(1000000) b", 300),
        1,
      ),
      (error) => error instanceof ApiError && error.status === 408,
    );
    await assert.rejects(
      store.queries.read(request("SELECT CAST('x' AS INTEGER) AS n"), 1),
      (error) => error instanceof ApiError && error.status === 400,
    );
  });
});

Deno.test("fileStream() reads the file in chunks of its size as they are pulled, and closes it", async () => {
  const path = await Deno.makeTempFile();
  try {
    const data = new Uint8Array(2500).map((_, i) => i % 251);
    await Deno.writeFile(path, data);
    const reader = fileStream(await Deno.open(path), 1024).getReader();
    const sizes: number[] = [];
    const chunks: Uint8Array<ArrayBuffer>[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      sizes.push(r.value.length);
      chunks.push(r.value);
    }
    assert.deepEqual(sizes, [1024, 1024, 452]);
    assert.deepEqual(new Uint8Array(await new Blob(chunks).arrayBuffer()), data);
    // A consumer that stops early cancels: the file is closed (the test's resource check).
    const cancelled = fileStream(await Deno.open(path), 1024).getReader();
    assert.equal((await cancelled.read()).value?.length, 1024);
    await cancelled.cancel();
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("streamQuery() streams a Parquet file of several row groups whole, as DuckDB reads it", async () => {
  await withTempStore(async (store, dir) => {
    const sql = "SELECT range AS n, 'row ' || range AS s FROM range(300000) ORDER BY n DESC";
    const { stream } = await store.queries.stream(request(sql), "parquet");
    const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    const path = `${dir}/../check-${crypto.randomUUID()}.parquet`;
    await Deno.writeFile(path, bytes);
    try {
      const instance = await DuckDBInstance.create(":memory:");
      const connection = await instance.connect();
      const reader = await connection.runAndReadAll(
        `SELECT count(*)::INTEGER, sum(n)::BIGINT,
           (max_by(n, file_row_number) + 10 * min_by(n, file_row_number))::BIGINT
         FROM read_parquet('${path}', file_row_number = true)`,
      );
      // In the query's order: 299999 first, 0 last.
      assert.deepEqual(reader.getRows()[0], [300000, 44999850000n, 2999990n]);
      connection.closeSync();
      instance.closeSync();
    } finally {
      await Deno.remove(path);
    }
  });
});
