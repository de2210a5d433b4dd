import assert from "node:assert/strict";
import { Database } from "../src/store/postgres/database.ts";
import { openPostgresStore } from "../src/store/postgres/postgres_store.ts";
import { appOver } from "./helpers/app.ts";
import { freshDatabase, postgresEnv, postgresTest } from "./helpers/postgres.ts";
import { query } from "./helpers/query.ts";
import { ALL_SCOPES, type Answer, errorOf, mint, ok, TestServer } from "./helpers/server.ts";

/** Terms of `1+1+…+1`: PostgreSQL's own parser ran out of stack on this many. */
const TERMS = 5_000;

/**
 * The store's deadline in the test of reads of records: a benign read takes a few ms of it,
 * the slow filter over {@link SLOW_ROWS} seconds.
 */
const READ_TIMEOUT_MS = 400;

/** Rows of 10,000 characters a case-insensitive match lowers whole, row by row. */
const SLOW_ROWS = 60_000;

await postgresTest(
  "POST /query on PostgreSQL answers hostile queries with their bound",
  async (t, postgres) => {
    const server = await TestServer.start({
      ...(await postgresEnv(postgres)),
      QUERY_TIMEOUT_SECONDS: "2",
    });
    const benign = async () => {
      assert.deepEqual(ok(await query(server, "SELECT 1 AS one")).records, [{ one: 1 }]);
    };
    try {
      await t.step("a NUL character in the text is 400, not 503", async () => {
        const error = errorOf(await query(server, "SELECT 1 AS s\u0000; DROP TABLE t"), 400);
        assert.match(error.message, /NUL/);
        await benign();
      });

      await t.step(`1+1+…+1 with ${TERMS} terms is 400 naming the bound`, async () => {
        const sum = `SELECT ${Array(TERMS).fill("1").join("+")}`;
        assert.match(errorOf(await query(server, sum), 400).message, /more than 64 deep/);
        await benign();
      });

      await t.step("a query too deep for the parser's stack is 400, however often", async () => {
        // Past the stack of PostgreSQL's parser in WebAssembly: a few dozen of these broke the
        // parser for the process, every later query failing.
        const sum = `SELECT ${Array(30_000).fill("1").join("+")}`;
        for (let i = 0; i < 60; i++) assert.equal((await query(server, sum)).status, 400);
        await benign();
        assert.deepEqual(ok(await query(server, "SELECT abs(-2) + 1 AS x")).records, [{ x: 3 }]);
        assert.match(errorOf(await query(server, sum), 400).message, /more than 64 deep/);
      });

      await t.step(
        "each hostile query of issue 44 has its status, and the service goes on",
        async () => {
          const hostile: { sql: string; params?: unknown[]; status: number; says: RegExp }[] = [
            {
              sql: "SELECT length(repeat('x', 1e9))",
              status: 400,
              says: /function repeat\(unknown, numeric\) does not exist/,
            },
            {
              sql: "SELECT length(repeat('x', 1073741824))",
              status: 400,
              says: /The query failed: requested length too large/,
            },
            {
              sql: `SELECT ${Array(TERMS).fill("1").join("+")}`,
              status: 400,
              says: /more than 64 deep/,
            },
            {
              sql: `SELECT ${"abs(".repeat(990)}1${")".repeat(990)}`,
              status: 400,
              says: /more than 64 deep/,
            },
            {
              sql: "SELECT count(*) FROM generate_series(1, 1e12)",
              status: 408,
              says: /ran longer than 2 s/,
            },
          ];
          for (const { sql, params, status, says } of hostile) {
            const answer = await query(server, sql, { params });
            assert.match(errorOf(answer, status).message, says, sql.slice(0, 60));
            await benign();
          }
          // PostgreSQL's LIKE gives up on a pattern that cannot match rather than backtracking.
          const like = await query(server, "SELECT repeat('a', 100000) LIKE $1 AS m", {
            params: ["%a%a%a%a%a%a%a%a%a%a%b"],
          });
          assert.deepEqual(ok(like).records, [{ m: false }]);
          await benign();
        },
      );
    } finally {
      await server.dispose();
    }
  },
);

/** Whether an answer shows the hidden column of insertion order, raw or as JSON writes it. */
function showsHidden(text: string): boolean {
  return text.includes("\u0001order") || text.includes("\\u0001order");
}

await postgresTest("a table's hidden column never shows on PostgreSQL", async (t, postgres) => {
  const server = await TestServer.start(await postgresEnv(postgres));
  try {
    ok(
      await server.request("POST", "table/z", {
        body: {
          table: { columns: [{ name: "n", type: "integer" }, { name: "s", type: "text" }] },
        },
      }),
    );
    ok(
      await server.request("POST", "table/z/records", {
        body: [{ n: 1, s: "a" }, { n: 2, s: "b" }],
      }),
    );

    await t.step("not in a whole row, however the query makes one", async () => {
      const queries = [
        "SELECT * FROM z",
        "SELECT z.* FROM z",
        "SELECT to_json(z) AS j FROM z",
        "SELECT row_to_json(z) AS j FROM z",
        "SELECT z FROM z",
        "SELECT ROW(z.*) AS r FROM z",
        "SELECT json_agg(z) AS j FROM z",
        "SELECT to_jsonb(y) AS j FROM public.z AS y",
        "SELECT to_json(z) AS j FROM ONLY z",
        "SELECT to_json(z) AS j FROM z TABLESAMPLE bernoulli (100)",
        "TABLE z",
        "SELECT to_json(c) AS j FROM (SELECT * FROM z) AS c",
        "WITH c AS (SELECT * FROM z) SELECT json_agg(c) AS j FROM c",
        "SELECT to_json(a) AS j FROM z AS a NATURAL JOIN z AS b",
        "SELECT to_json(y) AS j FROM z AS y(a, b)",
      ];
      for (const sql of queries) {
        const answer = await query(server, sql);
        assert.equal(answer.status, 200, `${sql}: ${answer.text}`);
        assert.ok(!showsHidden(answer.text), `${sql}: ${answer.text}`);
      }
      const one = ok(
        await query(server, "SELECT to_json(z) AS j FROM z WHERE n = $1", {
          params: [1],
        }),
      );
      assert.deepEqual(one.records, [{ j: { n: 1, s: "a" } }]);
      const renamed = ok(await query(server, "SELECT y FROM z AS y(a, b) ORDER BY a"));
      assert.equal(renamed.records.length, 2);
    });

    await t.step("not in any format of a query's answer", async () => {
      for (const format of ["csv", "ndjson", "json", "parquet"]) {
        for (const sql of ["SELECT * FROM z", "SELECT to_json(z) AS j, z FROM z"]) {
          const response = await fetch(`${server.base}/api/v1/query?format=${format}`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${server.token}`,
              "content-type": "application/json",
            },
            body: JSON.stringify({ sql }),
          });
          const text = new TextDecoder().decode(await response.arrayBuffer());
          assert.equal(response.status, 200, `${format} ${sql}: ${text.slice(0, 300)}`);
          assert.ok(!showsHidden(text), `${format} ${sql}: ${text.slice(0, 300)}`);
        }
      }
    });

    await t.step("not in records, summaries and exports, nor as a filter", async () => {
      const reads = [
        "table/z/records",
        "table/z/records?count=exact&order=s.desc",
        "table/z/summary",
        "table/z/records/csv",
        "table/z/records/ndjson",
        "table/z/records/json",
        "table/z/records/parquet",
      ];
      for (const path of reads) {
        const answer = await server.request("GET", path);
        assert.equal(answer.status, 200, `${path}: ${answer.text}`);
        assert.ok(!showsHidden(answer.text), `${path}: ${answer.text}`);
      }
      const hidden = encodeURIComponent("\u0001order");
      const refused: [string, string, unknown?][] = [
        ["GET", `table/z/records?${hidden}=eq.1`],
        ["GET", `table/z/records?order=${hidden}.desc`],
        ["GET", `table/z/records?select=${hidden}`],
        ["GET", `table/z/summary?${hidden}=gt.0`],
        ["PATCH", `table/z/records?${hidden}=eq.1`, { s: "x" }],
        ["PATCH", "table/z/records?n=eq.1", { "\u0001order": 5 }],
        ["DELETE", `table/z/records?${hidden}=eq.1`],
      ];
      for (const [method, path, body] of refused) {
        const answer = await server.request(method, path, body ? { body } : {});
        assert.ok([400, 422].includes(answer.status), `${method} ${path}: ${answer.text}`);
      }
      assert.equal(ok(await server.request("GET", "table/z/records?count=exact")).total, 2);
    });
  } finally {
    await server.dispose();
  }
});

await postgresTest(
  "every read of records on PostgreSQL has the store's deadline",
  async (t, postgres) => {
    const url = await freshDatabase(postgres);
    const store = await openPostgresStore({ url, readTimeoutMs: READ_TIMEOUT_MS });
    const direct = await Database.open({ url, maxConnections: 1 });
    const app = await appOver(store);
    const token = await mint({ scope: ALL_SCOPES });
    const send = async (method: string, path: string, body?: unknown): Promise<Answer> => {
      const response = await app.request(`/api/v1/${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    };
    const benign = async () => {
      assert.deepEqual(ok(await send("GET", "table/small/records")).records, [{ n: 1 }]);
    };
    try {
      const text = { table: { columns: [{ name: "s", type: "text" }] } };
      ok(await send("POST", "table/big", text));
      ok(
        await send("POST", "table/small", { table: { columns: [{ name: "n", type: "integer" }] } }),
      );
      // Straight into the tables: the app over a store alone has no spool directory for loads.
      await direct.withSession(async (s) => {
        await s.run("INSERT INTO public.small (n) VALUES (1)");
        await s.run(
          `INSERT INTO public.big (s) SELECT repeat('a', 10000) FROM generate_series(1, ${SLOW_ROWS})`,
        );
      });
      const slow = "s=ilike.*a*a*a*a*a*b";
      const cases: [string, string, unknown?][] = [
        ["GET", `table/big/records?${slow}&count=exact`],
        ["GET", `table/big/summary?${slow}`],
        ["GET", `table/big/records/csv?${slow}`],
        ["GET", `table/big/records/parquet?${slow}`],
        ["PATCH", `table/big/records?${slow}`, { s: "x" }],
        ["DELETE", `table/big/records?${slow}`],
      ];
      for (const [method, path, body] of cases) {
        await t.step(`${method} ${path.replace(slow, "<slow filter>")} is 408`, async () => {
          const error = errorOf(await send(method, path, body), 408);
          assert.equal(error.type, "request_timeout");
          await benign();
        });
      }

      await t.step("an export that goes on making progress outlives the deadline", async () => {
        await direct.withSession((s) =>
          s.run("INSERT INTO public.small (n) SELECT g FROM generate_series(2, 3000) AS g")
        );
        const response = await app.request("/api/v1/table/small/records/ndjson", {
          headers: { authorization: `Bearer ${token}` },
        });
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        let bytes = 0;
        while (true) {
          const { done, value } = await reader.read();
          if (done) break;
          bytes += value.length;
          // A slow reader: the time between batches is the client's, not the query's.
          await new Promise((resolve) => setTimeout(resolve, 2 * READ_TIMEOUT_MS));
        }
        assert.ok(bytes > 3000 * 8, `${bytes} bytes`);
      });
    } finally {
      await direct.close();
      await store.close();
    }
  },
);
