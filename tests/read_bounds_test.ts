/**
 * A reader cannot take the service down: each hostile read of a `tables:read` token is
 * answered with its documented status, the process's memory stays within its bound, and a
 * benign query is answered right after. No timing is asserted: a client timeout only stops a
 * test that would otherwise hang.
 */

import assert from "node:assert/strict";
import { mint, ok, TestServer } from "./helpers/server.ts";
import { query } from "./helpers/query.ts";
import { ENGINE } from "./helpers/engine.ts";

const MIB = 1024 ** 2;
/** The service's memory limit here, and the bound the contract sets above it. */
const MEMORY_LIMIT = 256 * MIB;
const MEMORY_BOUND = MEMORY_LIMIT + 256 * MIB;

/** A read that runs past any deadline of these tests, interrupted between rows. */
const CROSS_JOIN = ENGINE === "duckdb"
  ? "SELECT max(a.x + b.x) FROM range(1000000) a(x), range(1000000) b(x)"
  // One series, streamed: a join's inner side is materialised and can spill to disk first.
  : "SELECT count(*) FROM generate_series(1, 1000000000000::bigint)";

function nest(depth: number, wrap: (inner: string) => string, base: string): string {
  let sql = base;
  for (let i = 0; i < depth; i++) sql = wrap(sql);
  return sql;
}

/** Reads `sql` and checks its status, the memory it moved and a benign query after it. */
async function survives(
  server: TestServer,
  token: string,
  sql: string,
  statuses: readonly number[],
  params?: unknown[],
): Promise<string> {
  const before = Deno.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => peak = Math.max(peak, Deno.memoryUsage().rss), 5);
  const answer = await query(server, sql, { token, params }).finally(() => clearInterval(sampler));
  assert.ok(
    statuses.includes(answer.status),
    `${sql.slice(0, 80)}: ${answer.status} ${answer.text.slice(0, 300)}`,
  );
  if (ENGINE === "duckdb") {
    assert.ok(
      peak - before <= MEMORY_BOUND,
      `${sql.slice(0, 80)} moved the process's memory by ${Math.round((peak - before) / MIB)} MiB`,
    );
  }
  assert.deepEqual(ok(await query(server, "SELECT 40 + 2 AS n", { token })).records, [{ n: 42 }]);
  return answer.body?.error?.message ?? "";
}

Deno.test("hostile reads are answered with their documented status and the service goes on", async (t) => {
  const server = await TestServer.start({
    QUERY_TIMEOUT_SECONDS: "3",
    DUCKDB_MEMORY_LIMIT: "256MiB",
  });
  try {
    const token = await mint({ scope: "tables:read" });
    ok(
      await server.request("POST", "table/t", {
        body: {
          table: { columns: [{ name: "s", type: "varchar" }, { name: "n", type: "integer" }] },
        },
      }),
    );
    ok(
      await server.request("POST", "table/t/records", {
        body: [{ s: "a".repeat(400), n: 1 }, { s: "b", n: 2 }],
      }),
    );
    const bounded = ENGINE === "duckdb" ? [400] : [400, 408, 422, 503];
    const cases: [string, string, readonly number[], unknown[]?][] = [
      ["a text of 1e9 characters", "SELECT length(repeat('x', 1e9))", bounded],
      ["a list of 2e7 elements", "SELECT len(list_resize([1], 20000000))", bounded],
      ["a list of 1e9 elements", "SELECT len(list_resize([1], 1e9::BIGINT))", bounded],
      ["990 nested lists", `SELECT ${nest(990, (s) => `[${s}]`, "1")}`, [400]],
      ["a range of 1e7", "SELECT len(range(10000000))", bounded],
      [
        "40 nested lambdas",
        `SELECT ${nest(40, (s) => `list_transform([1], x -> ${s})`, "x")}`,
        [400],
      ],
      ["990 nested abs()", `SELECT ${nest(990, (s) => `abs(${s})`, "1")}`, [400]],
      [
        "24 nested lambdas",
        `SELECT ${nest(24, (s) => `list_transform([1], x -> ${s})`, "x")}`,
        [400],
      ],
      [
        "a pattern of many wildcards over a long text",
        "SELECT repeat('a', 100000) LIKE $1 AS m",
        [200, 408],
        ["%a%a%a%a%a%a%a%a%a%a%b"],
      ],
      ["5,000 terms", `SELECT ${Array(5000).fill("1").join("+")}`, [400]],
      ["a NUL in the text", "SELECT 1 AS s\u0000; DROP TABLE t", [400]],
      ["a cross join past the deadline", CROSS_JOIN, [408]],
    ];
    for (const [name, sql, statuses, params] of cases) {
      await t.step(name, async () => {
        await survives(server, token, sql, statuses, params);
      });
    }

    await t.step("a records filter over a long value", async () => {
      const answer = await server.request("GET", "table/t/records?s=ilike.*a*a*a*a*a*a*b", {
        token,
      });
      assert.deepEqual(ok(answer).records, []);
    });

    await t.step("a DELETE by such a filter deletes exactly what it matches", async () => {
      const deleted = ok(await server.request("DELETE", "table/t/records?s=like.*a*a*a*a*a*b"));
      assert.equal(deleted.deleted, 0);
      assert.equal(ok(await server.request("GET", "table/t/records")).records.length, 2);
    });

    await t.step("a body's params null means none, and unknown fields are ignored", async () => {
      const answer = await server.request("POST", "query", {
        token,
        body: { sql: "SELECT 1 AS one", params: null, comment: "from a notebook" },
      });
      assert.deepEqual(ok(answer).records, [{ one: 1 }]);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("one token's queries past QUERY_CONCURRENCY_PER_TOKEN are 429 while another's are answered", async () => {
  // The memory bound counts this whole test process, which earlier tests grew: room enough
  // that the slow ones end at their deadline, not at the bound.
  const server = await TestServer.start({
    QUERY_TIMEOUT_SECONDS: "8",
    QUERY_CONCURRENCY_PER_TOKEN: "2",
    DUCKDB_MEMORY_LIMIT: "4GiB",
  });
  try {
    const slow = await mint({ scope: "tables:read", sub: "slow" });
    const other = await mint({ scope: "tables:read", sub: "other" });
    // Three at once, each running to its 8 s deadline: whichever arrives third finds two
    // under way, whatever the order they arrive in.
    const held = Promise.all(
      [1, 2, 3].map(() => query(server, CROSS_JOIN, { token: slow })),
    );
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const began = performance.now();
      assert.deepEqual(ok(await query(server, "SELECT 2 AS n", { token: other })).records, [{
        n: 2,
      }]);
      latencies.push(performance.now() - began);
    }
    latencies.sort((a, b) => a - b);
    console.log(
      `other token's queries while two slow ones ran: p99 ${latencies.at(-1)!.toFixed(1)} ms`,
    );
    const answers = await held;
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [408, 408, 429]);
    const refused = answers.find((answer) => answer.status === 429)!;
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.match(refused.body.error.message, /QUERY_CONCURRENCY_PER_TOKEN/);
    assert.deepEqual(ok(await query(server, "SELECT 3 AS n", { token: slow })).records, [{ n: 3 }]);
  } finally {
    await server.dispose();
  }
});

Deno.test("SIGTERM with a query running stops the process and keeps every table", async () => {
  const server = await TestServer.spawn({ QUERY_TIMEOUT_SECONDS: "600" });
  try {
    ok(
      await server.request("POST", "table/kept", {
        body: { table: { columns: [{ name: "v", type: "integer" }] } },
      }),
    );
    ok(await server.request("POST", "table/kept/records", { body: [{ v: 1 }, { v: 2 }] }));
    const running = query(server, CROSS_JOIN).catch(() => undefined);
    // Most likely under way by then; the stop must hold either way.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const code = await server.stop("SIGTERM");
    assert.ok(code === 0 || code === 1, `exit ${code}: ${server.stderr}`);
    const answer = await running;
    assert.notEqual(answer?.status, 200);
    await server.restart();
    assert.deepEqual(ok(await server.request("GET", "table/kept/records")).records, [
      { v: 1 },
      { v: 2 },
    ]);
  } finally {
    await server.dispose();
  }
});

Deno.test("a table without columns shows no hidden column in its records, exports or queries", async () => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/z", { body: { table: { columns: [] } } }));
    ok(await server.request("POST", "table/z/records", { body: [{}, {}] }));
    // The placeholder's name begins with U+0001, raw or escaped as JSON writes it.
    // deno-lint-ignore no-control-regex -- that character is what is looked for
    const hidden = /\\u0001|\u0001/;
    const page = await server.request("GET", "table/z/records");
    assert.doesNotMatch(page.text, hidden);
    assert.equal(ok(page).records.length, 2);
    for (const format of ["csv", "ndjson", "json", "parquet"]) {
      const answer = await server.request("GET", `table/z/records/${format}`);
      assert.equal(answer.status, format === "parquet" ? 422 : 200, answer.text);
      assert.doesNotMatch(answer.text, hidden, format);
    }
    for (
      const sql of [
        "SELECT * FROM z",
        "SELECT to_json(z) AS j FROM z",
        "SELECT count(*) AS n FROM z",
      ]
    ) {
      const answer = await query(server, sql);
      assert.doesNotMatch(answer.text, hidden, sql);
      assert.ok([200, 400].includes(answer.status), `${sql}: ${answer.text}`);
    }
  } finally {
    await server.dispose();
  }
});
