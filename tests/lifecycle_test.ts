import assert from "node:assert/strict";
import { errorOf, ok, snapshot, TestServer } from "./helpers/server.ts";
import { onDuckDB } from "./helpers/engine.ts";

Deno.test("lifecycle: everything acknowledged survives a stop and a start", async () => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "schema/sales"));
    ok(
      await server.request("POST", "table/customers?schema=sales", {
        body: {
          table: {
            columns: [{ name: "id", type: "bigserial" }, {
              name: "name",
              type: "text",
              default: "'anonymous'",
            }],
            constraints: { primary_key: { name: "customers_pk", columns: ["id"] } },
          },
        },
      }),
    );
    ok(
      await server.request("POST", "table/invoices?schema=sales", {
        body: {
          table: {
            columns: [{ name: "customer", type: "bigint" }, {
              name: "total",
              type: "decimal(12,2)",
            }],
            constraints: {
              foreign_keys: [{
                column: "customer",
                reference_table: "customers",
                reference_column: "id",
                reference_schema: "sales",
              }],
            },
          },
        },
      }),
    );
    ok(await server.request("POST", "table/empty", { body: {} }));
    const before = await snapshot(server);
    await server.restart();
    assert.equal(await snapshot(server), before);
    errorOf(await server.request("DELETE", "table/customers?schema=sales"), 409);
  } finally {
    await server.dispose();
  }
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.test(`lifecycle: ${signal} finishes requests in flight and exits 0 with all acknowledged tables kept`, async () => {
    const server = await TestServer.spawn();
    try {
      const attempts = Array.from({ length: 100 }, (_, i) =>
        server.request("POST", `table/t${i}`, {
          body: {
            table: { columns: [{ name: "id", type: "serial" }, { name: "v", type: "varchar" }] },
          },
        }).catch(() => undefined));
      // Signal as soon as the first answer is back, while the rest are still in flight.
      await Promise.race(attempts);
      const code = await server.stop(signal);
      assert.equal(code, 0, server.stderr);
      const answers = await Promise.all(attempts);
      const acknowledged = answers.flatMap((a, i) => a?.status === 200 ? [`t${i}`] : []);
      console.log(
        `${signal}: ${acknowledged.length} of ${attempts.length} creations acknowledged before exit`,
      );
      await server.restart();
      const { tables } = ok(await server.request("GET", "table?limit=1000"));
      const present = new Set(tables.map((t: { name: string }) => t.name));
      for (const name of acknowledged) {
        assert.ok(present.has(name), `acknowledged table ${name} is missing`);
      }
      for (const name of present) {
        ok(await server.request("GET", `table/${name}`));
      }
    } finally {
      await server.dispose();
    }
  });
}

onDuckDB.test("lifecycle: exports a client cut short leave nothing open, so the stop checkpoints and exits 0", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/big/upload/json", {
        body: { data: Array.from({ length: 100_000 }, (_, k) => ({ k, v: "z".repeat(40) })) },
      }),
    );
    for (const format of ["ndjson", "csv", "ndjson", "csv"]) {
      const aborted = new AbortController();
      const answer = await fetch(`${server.base}/api/v1/table/big/records/${format}`, {
        headers: { authorization: `Bearer ${server.token}` },
        signal: aborted.signal,
      });
      // The first chunk, then the client goes: the rest of the result is never read.
      await answer.body!.getReader().read();
      aborted.abort();
    }
    // A write after them, for the closing checkpoint to write.
    ok(await server.request("PUT", "table/big", { body: { table: { name: "big2" } } }));
    assert.equal(await server.stop(), 0, server.stderr);
    assert.doesNotMatch(server.stderr, /closing checkpoint failed/);
  } finally {
    await server.dispose();
  }
});
