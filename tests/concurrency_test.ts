import assert from "node:assert/strict";
import { errorOf, ok, snapshot, TestServer } from "./helpers/server.ts";
import { runConcurrency } from "./reliability/concurrency.ts";

Deno.test("concurrency: 16 clients for 10 s, no 5xx, no acknowledged row or column lost", async () => {
  const server = await TestServer.start();
  try {
    const report = await runConcurrency(server, { clients: 16, seconds: 10 });
    console.log(
      `${report.requests} requests; acknowledged ${JSON.stringify(report.acknowledged)}; ` +
        `${report.editConflicts} edit conflicts retried`,
    );
    assert.deepEqual(report.failures, []);
    assert.equal(report.serverErrors, 0);
    assert.equal(report.lostRows, 0);
    assert.equal(report.lostColumns, 0);
    // The mix happened: each kind of work was acknowledged at least once.
    for (const [kind, count] of Object.entries(report.acknowledged)) {
      assert.ok(count > 0, `no ${kind} was acknowledged`);
    }
  } finally {
    await server.dispose();
  }
});

Deno.test("PUT with If-Match applies only to the definition it names", async () => {
  const server = await TestServer.start();
  try {
    const created = await server.request("POST", "table/t", {
      body: { table: { columns: [{ name: "a", type: "integer" }] } },
    });
    const read = await server.request("GET", "table/t");
    const tag = read.headers.get("etag");
    assert.match(tag ?? "", /^"[\w-]{27}"$/);
    assert.equal(created.headers.get("etag"), tag, "POST and GET tag the same definition");

    const rename = (name: string) => ({ table: { columns: [{ id: 1, name, type: "integer" }] } });
    const first = await server.request("PUT", "table/t", {
      body: rename("b"),
      headers: { "if-match": tag! },
    });
    ok(first);
    assert.notEqual(first.headers.get("etag"), tag);
    assert.equal(
      (await server.request("GET", "table/t")).headers.get("etag"),
      first.headers.get("etag"),
    );

    const before = await snapshot(server);
    const stale = await server.request("PUT", "table/t", {
      body: rename("c"),
      headers: { "if-match": tag! },
    });
    assert.equal(errorOf(stale, 409).type, "edit_conflict");
    assert.equal(await snapshot(server), before);

    ok(await server.request("PUT", "table/t", { body: rename("d"), headers: { "if-match": "*" } }));
    ok(
      await server.request("PUT", "table/t", {
        body: rename("e"),
        headers: {
          "if-match": `"other", ${(await server.request("GET", "table/t")).headers.get("etag")}`,
        },
      }),
    );
    ok(await server.request("PUT", "table/t", { body: rename("f") }));
    assert.equal(ok(await server.request("GET", "table/t")).table.columns[0].name, "f");
  } finally {
    await server.dispose();
  }
});
