import assert from "node:assert/strict";
import { DuckDBInstance } from "@duckdb/node-api";
import { fingerprint, mint, ok, TestServer } from "./helpers/server.ts";
import { query } from "./helpers/query.ts";
import { HOSTILE, type Hostile, LEGITIMATE } from "./fixtures/query_catalogue.ts";
import { onDuckDB } from "./helpers/engine.ts";

/** The fixture of the guard's catalogue (query_guard_test.ts), made through the API. */
const TABLES: { schema: string; name: string; columns: [string, string][]; rows: unknown[] }[] = [
  {
    schema: "public",
    name: "orders",
    columns: [
      ["id", "INTEGER"],
      ["customer_id", "INTEGER"],
      ["amount", "DECIMAL(10,2)"],
      ["created_at", "TIMESTAMP"],
      ["status", "VARCHAR"],
      ["tags", "VARCHAR[]"],
      ["meta", "JSON"],
    ],
    rows: [
      {
        id: 1,
        customer_id: 1,
        amount: 10.5,
        created_at: "2026-01-01T10:00:00",
        status: "paid",
        tags: ["a", "b"],
        meta: { k: 1 },
      },
      {
        id: 2,
        customer_id: 2,
        amount: 200,
        created_at: "2026-02-01T11:00:00",
        status: "open",
        tags: [],
        meta: { k: 2 },
      },
      { id: 3, customer_id: 1, amount: null, created_at: "2026-02-03T12:00:00", status: "paid" },
    ],
  },
  {
    schema: "public",
    name: "customers",
    columns: [["id", "INTEGER"], ["name", "VARCHAR"], ["country", "VARCHAR"]],
    rows: [
      { id: 1, name: "Ann", country: "NO" },
      { id: 2, name: "Bo", country: "SE" },
      { id: 4, name: "Cy", country: "NO" },
    ],
  },
  {
    schema: "public",
    name: "events",
    columns: [["at", "TIMESTAMP"], ["kind", "VARCHAR"]],
    rows: [{ at: "2026-01-15T00:00:00", kind: "x" }, { at: "2026-03-01T00:00:00", kind: "y" }],
  },
  {
    schema: "sales",
    name: "targets",
    columns: [["region", "VARCHAR"], ["target", "DOUBLE"]],
    rows: [{ region: "north", target: 1000 }],
  },
  {
    schema: "secret",
    name: "salaries",
    columns: [["name", "VARCHAR"], ["salary", "INTEGER"]],
    rows: [{ name: "Eve", salary: 1 }],
  },
];

/**
 * `sql` as it reads in the service: the catalogue's fixture is an in-memory database named
 * `memory`, the service's file is `tables.duckdb`, a database named `tables`.
 */
function inService(sql: string): string {
  return sql.replaceAll(
    /\b(memory|tables)\./g,
    (_, name) => name === "memory" ? "tables." : "memory.",
  );
}

/**
 * Hostile only in the guard's own fixture: a temporary macro there hides the built-in, and
 * no request can make a temporary macro on the service's connections.
 */
const FIXTURE_ONLY = new Set(["SELECT ucase(name) FROM customers"]);

/** Runs `work` over `items`, `width` at a time, in order of the items. */
async function batched<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += width) {
    results.push(...await Promise.all(items.slice(i, i + width).map(work)));
  }
  return results;
}

function short(sql: string): string {
  const line = sql.replaceAll(/\s+/g, " ").trim();
  return line.length > 90 ? `${line.slice(0, 90)}…` : line;
}

/** The catalogue's fixture: the tables through the API; a view and a `main` table directly. */
async function startWithFixture(env: Record<string, string>): Promise<TestServer> {
  const server = await TestServer.start(env);
  for (const schema of ["sales", "secret"]) ok(await server.request("POST", `schema/${schema}`));
  for (const table of TABLES) {
    const columns = table.columns.map(([name, type]) => ({ name, type }));
    ok(
      await server.request("POST", `table/${table.name}?schema=${table.schema}`, {
        body: { table: { columns } },
      }),
    );
    ok(
      await server.request("POST", `table/${table.name}/records?schema=${table.schema}`, {
        body: table.rows,
      }),
    );
  }
  // No route makes a view or a table of DuckDB's own schema: the file gets them while the
  // service is stopped.
  await server.stop();
  const instance = await DuckDBInstance.create(`${server.dataDir}/tables.duckdb`);
  const connection = await instance.connect();
  await connection.run(
    "CREATE VIEW public.big_orders AS SELECT * FROM public.orders WHERE amount > 100",
  );
  await connection.run("CREATE TABLE main.leak (secret VARCHAR)");
  // A macro in the database hides a built-in of the same name: the guard refuses calls to it.
  await connection.run("CREATE MACRO main.lcase(x) AS 'hidden'");
  connection.closeSync();
  instance.closeSync();
  await server.restart();
  return server;
}

onDuckDB.test("query and exports over HTTP, on the guard's catalogue", async (t) => {
  const server = await startWithFixture({ QUERY_TIMEOUT_SECONDS: "2" });
  try {
    await steps(t, server);
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("POST /query answers 503 for a query that exhausts memory, and goes on", async () => {
  // Its own server, at the default deadline: on a busy machine the 2 s of the catalogue's
  // server could pass before the memory runs out.
  const server = await TestServer.start({ DUCKDB_MEMORY_LIMIT: "256MiB" });
  try {
    // A list aggregate cannot spill: 100 million BIGINTs are 800 MB past the 256 MiB limit.
    const answer = await query(server, "SELECT length(list(range)) AS n FROM range(100000000)");
    assert.equal(answer.status, 503, answer.text);
    assert.equal(answer.body.error.type, "unavailable");
    assert.deepEqual(ok(await query(server, "SELECT 1 AS one")).records, [{ one: 1 }]);
  } finally {
    await server.dispose();
  }
});

async function steps(t: Deno.TestContext, server: TestServer): Promise<void> {
  await t.step(
    "POST /query refuses every hostile query of the catalogue and changes nothing",
    async () => {
      assert.ok(HOSTILE.length >= 200);
      const before = await fingerprint(server);
      const tokens = new Map<string, string>();
      for (const hostile of HOSTILE) {
        const key = hostile.schemas?.join(",");
        if (key !== undefined && !tokens.has(key)) {
          tokens.set(key, await mint({ scope: "tables:read", schemas: [...hostile.schemas!] }));
        }
      }
      const hostiles = HOSTILE.filter((hostile) => !FIXTURE_ONLY.has(hostile.sql));
      // As many at once as QUERY_CONCURRENCY_PER_TOKEN lets one token have.
      const answers = await batched(hostiles, 4, async (hostile) => {
        const token = hostile.schemas ? tokens.get(hostile.schemas.join(",")) : undefined;
        return { hostile, answer: await query(server, inService(hostile.sql), { token }) };
      });
      // Respelled for the service's database name, a refusal may come for the other reason.
      const expected = (hostile: Hostile) =>
        inService(hostile.sql) === hostile.sql ? [hostile.status ?? 400] : [400, 403];
      const wrong = answers.filter(({ hostile, answer }) =>
        !expected(hostile).includes(answer.status)
      )
        .map(({ hostile, answer }) =>
          `${answer.status} (not ${hostile.status ?? 400}) ${hostile.why}: ${short(hostile.sql)}: ${
            answer.body?.error?.message ?? answer.text.slice(0, 100)
          }`
        );
      assert.deepEqual(wrong, []);
      ok(await server.request("GET", "/healthz", { token: null }));
      assert.equal(await fingerprint(server), before);
    },
  );

  await t.step("POST /query answers every legitimate query of the catalogue 200", async () => {
    const answers = await batched(LEGITIMATE, 4, async (legitimate) => ({
      legitimate,
      answer: await query(server, inService(legitimate.sql), { params: legitimate.params }),
    }));
    const wrong = answers.filter(({ answer }) => answer.status !== 200).map((
      { legitimate, answer },
    ) =>
      `${answer.status} ${legitimate.why}: ${short(legitimate.sql)}: ${answer.text.slice(0, 200)}`
    );
    assert.deepEqual(wrong, []);
  });

  await t.step(
    "POST /query answers legitimate queries of the catalogue with the right values",
    async () => {
      const expected: [string, unknown[]][] = [
        ["SELECT id, amount FROM public.orders WHERE amount > 10 ORDER BY id", [
          { id: 1, amount: 10.5 },
          { id: 2, amount: 200 },
        ]],
        ["SELECT status, count(*) FROM orders GROUP BY ALL ORDER BY ALL", [
          { status: "open", "count_star()": 1 },
          { status: "paid", "count_star()": 2 },
        ]],
        ["SELECT * FROM big_orders", [{
          id: 2,
          customer_id: 2,
          amount: 200,
          created_at: "2026-02-01T11:00:00.000000",
          status: "open",
          tags: [],
          meta: { k: 2 },
        }]],
        ["WITH paid AS (SELECT * FROM orders WHERE status = 'paid') SELECT count(*) FROM paid", [
          { "count_star()": 2 },
        ]],
        ["SELECT id FROM orders UNION SELECT id FROM customers ORDER BY id", [
          { id: 1 },
          { id: 2 },
          { id: 3 },
          { id: 4 },
        ]],
        ["SELECT $1::INTEGER + $2::INTEGER AS s", [{ s: 3 }]],
        ["SELECT * FROM range(5) r(i) WHERE i % 2 = 0", [{ i: 0 }, { i: 2 }, { i: 4 }]],
        ["SELECT c.name, t.region FROM customers c CROSS JOIN sales.targets t", [
          { name: "Ann", region: "north" },
          { name: "Bo", region: "north" },
          { name: "Cy", region: "north" },
        ]],
      ];
      for (const [sql, records] of expected) {
        const legitimate = LEGITIMATE.find((l) => l.sql === sql);
        assert.ok(legitimate, `not in the catalogue: ${sql}`);
        const answer = ok(await query(server, sql, { params: legitimate.params }));
        assert.deepEqual(answer.records, records, sql);
      }
    },
  );

  await t.step(
    "POST /query answers columns with DuckDB's types and records rendered as pages are",
    async () => {
      const answer = ok(
        await query(
          server,
          "SELECT id, amount, created_at, tags, meta FROM orders WHERE status = $1 ORDER BY id",
          { params: ["paid"] },
        ),
      );
      assert.deepEqual(answer, {
        columns: [
          { name: "id", type: "INTEGER" },
          { name: "amount", type: "DECIMAL(10,2)" },
          { name: "created_at", type: "TIMESTAMP" },
          { name: "tags", type: "VARCHAR[]" },
          { name: "meta", type: "JSON" },
        ],
        records: [
          {
            id: 1,
            amount: 10.5,
            created_at: "2026-01-01T10:00:00.000000",
            tags: ["a", "b"],
            meta: { k: 1 },
          },
          { id: 3, amount: null, created_at: "2026-02-03T12:00:00.000000", tags: null, meta: null },
        ],
        truncated: false,
      });
    },
  );

  await t.step(
    "POST /query binds parameters of every JSON scalar kind, never interpolating them",
    async () => {
      const answer = ok(
        await query(server, "SELECT $1 AS i, $2 AS d, $3 AS s, $4 AS b, $5 AS n", {
          params: [7, 2.5, "x'; DROP TABLE orders; --", true, null],
        }),
      );
      assert.deepEqual(answer.columns.map((c: { type: string }) => c.type), [
        "HUGEINT",
        "DOUBLE",
        "VARCHAR",
        "BOOLEAN",
        "INTEGER",
      ]);
      // A name repeated gets DuckDB's suffix, so that each record has both.
      const twice = ok(await query(server, "SELECT id, id FROM customers ORDER BY id LIMIT 1"));
      assert.deepEqual(twice.records, [{ id: 1, id_1: 1 }]);
      assert.deepEqual(answer.records, [
        { i: 7, d: 2.5, s: "x'; DROP TABLE orders; --", b: true, n: null },
      ]);
      const counted = ok(
        await query(
          server,
          "SELECT count(*) AS n FROM orders WHERE customer_id = ? AND status = ?",
          {
            params: [1, "paid"],
          },
        ),
      );
      assert.deepEqual(counted.records, [{ n: 2 }]);
      const ucase = ok(await query(server, "SELECT ucase(name) AS u FROM customers ORDER BY id"));
      assert.deepEqual(ucase.records[0], { u: "ANN" });
      const missing = await query(server, "SELECT $1 AS a");
      assert.equal(missing.status, 400, missing.text);
      for (const params of [[{ a: 1 }], [[1, 2]], "1"]) {
        const refused = await server.request("POST", "query", {
          body: { sql: "SELECT $1", params },
        });
        assert.equal(refused.status, 400, refused.text);
      }
    },
  );

  await t.step(
    "POST /query answers at most limit rows and says whether it cut the result short",
    async () => {
      const sql = "SELECT range AS n FROM range(2500) ORDER BY n DESC";
      const first = ok(await query(server, sql));
      assert.equal(first.records.length, 1000);
      assert.equal(first.records[0].n, 2499);
      assert.equal(first.truncated, true);
      const some = ok(await query(server, sql, { search: "?limit=3" }));
      assert.deepEqual(some.records, [{ n: 2499 }, { n: 2498 }, { n: 2497 }]);
      assert.equal(ok(await query(server, sql, { search: "?limit=2500" })).truncated, false);
      assert.equal((await query(server, sql, { search: "?limit=10001" })).status, 400);
    },
  );

  await t.step("POST /query streams ndjson, csv and parquet without a row cap", async () => {
    const sql = "SELECT range AS n, 'a,b' AS s FROM range(3000) ORDER BY n";
    const ndjson = await query(server, sql, { search: "?format=ndjson" });
    assert.equal(ndjson.status, 200);
    assert.match(ndjson.headers.get("content-type")!, /^application\/x-ndjson/);
    const lines = ndjson.text.trimEnd().split("\n");
    assert.equal(lines.length, 3000);
    assert.deepEqual(JSON.parse(lines[2999]!), { n: 2999, s: "a,b" });

    const csv = await query(server, sql, { search: "?format=csv" });
    assert.match(csv.headers.get("content-type")!, /^text\/csv/);
    assert.equal(csv.text.split("\n").slice(0, 3).join("\n"), 'n,s\n0,"a,b"\n1,"a,b"');

    const response = await fetch(`${server.base}/api/v1/query?format=parquet`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: JSON.stringify({ sql }),
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/vnd.apache.parquet");
    const bytes = new Uint8Array(await response.arrayBuffer());
    const magic = new TextDecoder().decode(bytes.subarray(0, 4));
    assert.equal(magic, "PAR1");
    assert.equal(new TextDecoder().decode(bytes.subarray(bytes.length - 4)), "PAR1");
    // Spooled and gone.
    const left = [];
    for await (const entry of Deno.readDir(`${server.dataDir}/spool`)) left.push(entry.name);
    assert.deepEqual(left.filter((name) => name.endsWith(".parquet")), []);
  });

  await t.step(
    "POST /query interrupts a query past QUERY_TIMEOUT_SECONDS with 408 while a load beside it succeeds",
    async () => {
      const bomb = query(server, "SELECT count(*) FROM range(1000000) a, range(1000000) b");
      const recursive = query(
        server,
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
      );
      // Streamed, it meets the deadline only while it makes no progress: rows keep coming past
      // it for as long as the client reads, and the client's leaving ends it.
      const streamed = fetch(`${server.base}/api/v1/query?format=ndjson`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify({ sql: "SELECT * FROM range(1000000) a, range(1000000) b" }),
      }).then(async (response) => {
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        const until = performance.now() + 3000; // past QUERY_TIMEOUT_SECONDS
        let bytes = 0;
        while (performance.now() < until) bytes += (await reader.read()).value?.length ?? 0;
        const more = await reader.read();
        await reader.cancel();
        return { bytes, more: !more.done };
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      ok(
        await server.request("POST", "table/events/records", {
          body: [{ at: "2026-04-01T00:00:00", kind: "z" }],
        }),
      );
      for (const answer of [await bomb, await recursive]) {
        assert.equal(answer.status, 408, answer.text);
        assert.equal(answer.body.error.type, "request_timeout");
      }
      const stream = await streamed;
      assert.ok(stream.bytes > 0 && stream.more, "the stream ended at the deadline");
      const count = ok(await query(server, "SELECT count(*) AS n FROM events WHERE kind = 'z'"));
      assert.deepEqual(count.records, [{ n: 1 }]);
      ok(
        await server.request("POST", "query", {
          body: { sql: "SELECT 1 AS one" },
        }),
      );
    },
  );

  await t.step("POST /query confines a token to its schemas", async () => {
    const token = await mint({ scope: "tables:read", schemas: ["sales"] });
    assert.equal((await query(server, "SELECT * FROM orders", { token })).status, 403);
    assert.equal(
      (await query(server, "SELECT * FROM targets", { token, search: "?schema=public" })).status,
      403,
    );
    const own = ok(
      await query(server, "SELECT region FROM targets", { token, search: "?schema=sales" }),
    );
    assert.deepEqual(own.records, [{ region: "north" }]);
    const qualified = ok(await query(server, "SELECT target FROM sales.targets", { token }));
    assert.deepEqual(qualified.records, [{ target: 1000 }]);
    const writer = await mint({ scope: "templates:read" });
    assert.equal((await query(server, "SELECT 1", { token: writer })).status, 403);
  });

  await t.step(
    "POST /query checks a query sent again against the scope and the catalogue of now",
    async () => {
      // The guard's answers are kept per text, scope and catalogue: none may outlive a change.
      const sql = "SELECT count(*) AS n FROM sales.passing";
      ok(
        await server.request("POST", "table/passing?schema=sales", {
          body: { table: { columns: [{ name: "x", type: "integer" }] } },
        }),
      );
      assert.deepEqual(ok(await query(server, sql)).records, [{ n: 0 }]);
      const other = await mint({ scope: "tables:read", schemas: ["public"] });
      assert.equal((await query(server, sql, { token: other })).status, 403);
      ok(await server.request("DELETE", "table/passing?schema=sales"));
      assert.equal((await query(server, sql)).status, 400);
      ok(
        await server.request("POST", "table/passing?schema=sales", {
          body: { table: { columns: [{ name: "x", type: "integer" }] } },
        }),
      );
      assert.deepEqual(ok(await query(server, sql)).records, [{ n: 0 }]);
      ok(await server.request("DELETE", "table/passing?schema=sales"));
    },
  );

  await t.step("POST /query refuses a body that is not one query", async () => {
    for (
      const body of [{}, { sql: "" }, { sql: 1 }, { sql: "SELECT 1", params: {} }, ["SELECT 1"]]
    ) {
      const answer = await server.request("POST", "query", { body });
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
    }
    // As the contract's other bodies: an unknown field is ignored, and null params are none.
    const extra = { sql: "SELECT 1 AS one", params: null, extra: true };
    assert.deepEqual(ok(await server.request("POST", "query", { body: extra })).records, [
      { one: 1 },
    ]);
    const format = await query(server, "SELECT 1", { search: "?format=xml" });
    assert.equal(format.status, 400);
  });

  await t.step(
    "GET records/{format} exports records as ndjson, json and parquet with a file name, filtered, selected and ordered",
    async () => {
      for (
        const [format, type] of [
          ["ndjson", "application/x-ndjson"],
          ["json", "application/json"],
          ["parquet", "application/vnd.apache.parquet"],
          ["csv", "text/csv"],
        ] as const
      ) {
        const response = await fetch(
          `${server.base}/api/v1/table/customers/records/${format}?timezone_offset=1`,
          { headers: { authorization: `Bearer ${server.token}` } },
        );
        assert.equal(response.status, 200, format);
        assert.ok(response.headers.get("content-type")!.startsWith(type), format);
        assert.match(
          response.headers.get("content-disposition")!,
          new RegExp(`^attachment; filename="customers_\\d{8}_\\d{6}\\.${format}"$`),
        );
        const bytes = new Uint8Array(await response.arrayBuffer());
        const text = new TextDecoder().decode(bytes);
        const rows = [
          { id: 1, name: "Ann", country: "NO" },
          { id: 2, name: "Bo", country: "SE" },
          { id: 4, name: "Cy", country: "NO" },
        ];
        if (format === "ndjson") {
          assert.deepEqual(text.trimEnd().split("\n").map((line) => JSON.parse(line)), rows);
        } else if (format === "json") {
          assert.deepEqual(JSON.parse(text), rows);
        } else if (format === "csv") {
          assert.equal(text, "id,name,country\n1,Ann,NO\n2,Bo,SE\n4,Cy,NO\n");
        } else {
          assert.equal(text.slice(0, 4), "PAR1");
        }
      }
      const filtered = await server.request(
        "GET",
        "table/customers/records/csv?country=eq.NO&select=name,id&order=id.desc",
      );
      assert.equal(filtered.text, "name,id\nCy,4\nAnn,1\n");
      // Parquet without `order` comes in storage order (read as a set); with it, sorted.
      const ordered = await fetch(
        `${server.base}/api/v1/table/customers/records/parquet?order=id.desc&select=id`,
        { headers: { authorization: `Bearer ${server.token}` } },
      );
      assert.equal(ordered.status, 200);
      const file = await Deno.makeTempFile({ suffix: ".parquet" });
      try {
        await Deno.writeFile(file, new Uint8Array(await ordered.arrayBuffer()));
        const instance = await DuckDBInstance.create(":memory:");
        const connection = await instance.connect();
        const reader = await connection.runAndReadAll(
          `SELECT id FROM read_parquet('${file}', file_row_number = true) ORDER BY file_row_number`,
        );
        assert.deepEqual(reader.getRows().map((row) => Number(row[0])), [4, 2, 1]);
        connection.closeSync();
        instance.closeSync();
      } finally {
        await Deno.remove(file);
      }
      const none = await server.request("GET", "table/customers/records/ndjson?id=gt.100");
      assert.equal(none.status, 200);
      assert.equal(none.text, "");
      const array = await server.request("GET", "table/customers/records/json?id=gt.100");
      assert.equal(array.text, "[]\n");
      for (const query of ["limit=1", "offset=1", "after=", "count=none", "nope=eq.1"]) {
        const refused = await server.request("GET", `table/customers/records/csv?${query}`);
        assert.equal(refused.status, 400, `${query}: ${refused.text}`);
      }
      const badValue = await server.request("GET", "table/customers/records/csv?id=eq.x");
      assert.equal(badValue.status, 400);
      const unknown = await server.request("GET", "table/customers/records/xml");
      assert.equal(unknown.status, 404, "no route exports xml");
      const empty = await server.request("GET", "table/nothing/records/ndjson");
      assert.equal(empty.status, 404);
    },
  );
}
