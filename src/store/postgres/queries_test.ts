import assert from "node:assert/strict";
import type { QueryRequest } from "../store.ts";
import { rejectsWith } from "../../../tests/helpers/api_error.ts";
import { freshDatabase, postgresTest } from "../../../tests/helpers/postgres.ts";
import type { StoreContext } from "./context.ts";
import { Database } from "./database.ts";
import { openStaging } from "../duckdb/mod.ts";
import { readQuery, streamQuery } from "./queries.ts";
import { KnownDescriptions } from "./descriptions.ts";

function request(sql: string, params: QueryRequest["params"] = [], timeoutMs = 10_000) {
  return { sql, params, defaultSchema: "public", timeoutMs };
}

await postgresTest(`readQuery() and streamQuery() on PostgreSQL`, async (t, server) => {
  const database = await Database.open({ url: await freshDatabase(server), maxConnections: 2 });
  const spoolDir = await Deno.realPath(await Deno.makeTempDir());
  const staging = await openStaging({ spoolDir, tempDir: spoolDir });
  const context: StoreContext = {
    database,
    spoolDir,
    staging,
    readTimeoutMs: 10_000,
    descriptions: new KnownDescriptions(),
  };
  try {
    await database.withSession((s) =>
      s.run(`CREATE TABLE public.t (
          id integer, big bigint, n numeric(10,2), f double precision, b boolean,
          d date, ts timestamp, tz timestamptz, bin bytea, j jsonb, a integer[], s text)`)
    );
    await database.withSession((s) =>
      s.run(`INSERT INTO public.t VALUES
          (1, 9007199254740993, 12.50, 0.1, true, '2024-01-02', '2024-01-02 03:04:05.25',
           '2024-01-02 03:04:05+02', '\\x0102', '{"k": [1, "x"]}', '{1,NULL,3}', 'say "hi", ok'),
          (2, 5, NULL, 'NaN', false, '0002-03-04 BC', NULL, NULL, NULL, NULL, '{}', '')`)
    );

    await t.step("values render as on DuckDB, with PostgreSQL's type names", async () => {
      const page = await readQuery(context, request("SELECT * FROM t ORDER BY id"), 10);
      assert.deepEqual(page.columns.map((c) => c.type), [
        "integer",
        "bigint",
        "numeric(10,2)",
        "double precision",
        "boolean",
        "date",
        "timestamp without time zone",
        "timestamp with time zone",
        "bytea",
        "jsonb",
        "integer[]",
        "text",
      ]);
      assert.equal(page.truncated, false);
      assert.deepEqual(JSON.parse(page.json), [
        {
          id: 1,
          big: "9007199254740993",
          n: 12.5,
          f: 0.1,
          b: true,
          d: "2024-01-02",
          ts: "2024-01-02T03:04:05.250000",
          tz: "2024-01-02T01:04:05.000000Z",
          bin: "AQI=",
          j: { k: [1, "x"] },
          a: [1, null, 3],
          s: 'say "hi", ok',
        },
        {
          id: 2,
          big: 5,
          n: null,
          f: "nan",
          b: false,
          d: "-0001-03-04",
          ts: null,
          tz: null,
          bin: null,
          j: null,
          a: [],
          s: "",
        },
      ]);
      assert.match(page.json, /"n":12\.50,/);
    });

    await t.step("parameters bind, a repeated name gets a suffix, the limit cuts", async () => {
      const page = await readQuery(
        context,
        request("SELECT id, id, $1::text AS s FROM t WHERE id > $2 ORDER BY id", ["x'--", 0]),
        1,
      );
      assert.deepEqual(JSON.parse(page.json), [{ id: 1, id_1: 1, s: "x'--" }]);
      assert.equal(page.truncated, true);
    });

    await t.step(
      "a refused or failing query is 400, 403 or 408 and changes nothing",
      async () => {
        await rejectsWith(
          readQuery(context, request("SELECT * FROM nope"), 5),
          400,
          /"public\.nope", which is not a table/,
        );
        await rejectsWith(
          readQuery(context, request("SELECT $1::int"), 5),
          400,
          /takes 1 parameter, but 0 were given/,
        );
        await rejectsWith(
          readQuery(context, request("SELECT 1 / (id - id) FROM t"), 5),
          400,
          /The query failed: division by zero/,
        );
        await rejectsWith(
          readQuery(context, request("SELECT nosuch FROM t"), 5),
          400,
          /The query failed/,
        );
        await rejectsWith(readQuery(context, request("DELETE FROM t"), 5), 400, /./);
        await rejectsWith(
          readQuery(context, request("SELECT * FROM pg_catalog.pg_authid"), 5),
          403,
          /pg_catalog/,
        );
        const slow =
          "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b";
        const started = Date.now();
        await rejectsWith(
          readQuery(context, request(slow, [], 300), 5),
          408,
          /longer than 0.3 s/,
        );
        assert.ok(Date.now() - started < 5_000);
        const [count] = await database.withSession((s) =>
          s.rows("SELECT count(*)::int AS n FROM t")
        );
        assert.equal(count?.n, 2);
      },
    );

    await t.step("every format streams, and Parquet is written by DuckDB", async () => {
      const sql = "SELECT id, s, b FROM t ORDER BY id";
      const csv = await streamQuery(context, request(sql), "csv");
      assert.equal(
        await new Response(csv.stream).text(),
        'id,s,b\n1,"say ""hi"", ok",true\n2,"",false\n',
      );
      const ndjson = await streamQuery(context, request(sql), "ndjson");
      assert.equal(
        await new Response(ndjson.stream).text(),
        '{"id":1,"s":"say \\"hi\\", ok","b":true}\n{"id":2,"s":"","b":false}\n',
      );
      const json = await streamQuery(context, request(sql), "json");
      assert.deepEqual(JSON.parse(await new Response(json.stream).text()).length, 2);
      const empty = await streamQuery(context, request("SELECT id FROM t WHERE false"), "json");
      assert.equal(await new Response(empty.stream).text(), "[]\n");
      const parquet = await streamQuery(
        context,
        request("SELECT * FROM t ORDER BY id"),
        "parquet",
      );
      const bytes = new Uint8Array(await new Response(parquet.stream).arrayBuffer());
      assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "PAR1");
      assert.deepEqual([...Deno.readDirSync(spoolDir)], []);
    });

    await t.step("a long stream is read batch by batch and may be cancelled", async () => {
      const sql = "SELECT g AS n FROM generate_series(1, 250000) g";
      const { stream } = await streamQuery(context, request(sql), "ndjson");
      const reader = stream.getReader();
      const first = await reader.read();
      assert.ok(first.value && first.value.length < 1_000_000);
      await reader.cancel();
      // Both connections of the pool are free again.
      const pages = await Promise.all(
        [1, 2, 3].map(() => readQuery(context, request("SELECT 1 AS x"), 1)),
      );
      assert.equal(pages.length, 3);
      const whole = await streamQuery(context, request(sql), "csv");
      const text = await new Response(whole.stream).text();
      assert.equal(text.split("\n").length, 250002);
    });

    await t.step("a stream past its deadline errors rather than ending", async () => {
      // The first batch (1,000 rows) comes at once; each row after it takes long.
      const sql = "SELECT g, (SELECT count(*) FROM generate_series(1, " +
        "CASE WHEN g > 1000 THEN 5000000 ELSE 1 END)) AS c FROM generate_series(1, 5000) g";
      const { stream } = await streamQuery(context, request(sql, [], 1500), "ndjson");
      await assert.rejects(new Response(stream).text(), /longer than 1.5 s/);
    });
  } finally {
    await staging.close();
    await database.close();
    await Deno.remove(spoolDir, { recursive: true });
  }
});
