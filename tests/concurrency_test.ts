import assert from "node:assert/strict";
import { samples, value } from "./helpers/metrics.ts";
import { errorOf, ok, snapshot, TestServer, uploadForm } from "./helpers/server.ts";
import { beforeDeadline } from "../src/deadline.ts";
import { runConcurrency } from "./reliability/concurrency.ts";
import { ENGINE, onDuckDB } from "./helpers/engine.ts";

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

Deno.test({
  name: "concurrency: two instances on one PostgreSQL, 16 clients for 10 s across them, no 5xx, " +
    `nothing acknowledged lost${ENGINE === "postgres" ? "" : " (ignored: PostgreSQL only)"}`,
  ignore: ENGINE !== "postgres",
  async fn() {
    const one = await TestServer.start();
    const other = await TestServer.start({ DATABASE_URL: one.env.DATABASE_URL! });
    try {
      const report = await runConcurrency([one, other], { clients: 16, seconds: 10, seed: 2 });
      console.log(
        `two instances: ${report.requests} requests; acknowledged ` +
          `${JSON.stringify(report.acknowledged)}; ${report.editConflicts} edit conflicts retried`,
      );
      assert.deepEqual(report.failures, []);
      assert.equal(report.serverErrors, 0);
      assert.equal(report.lostRows, 0);
      assert.equal(report.lostColumns, 0);
      for (const [kind, count] of Object.entries(report.acknowledged)) {
        assert.ok(count > 0, `no ${kind} was acknowledged`);
      }
    } finally {
      await other.dispose();
      await one.dispose();
    }
  },
});

Deno.test("concurrent skip and update loads with overlapping keys all succeed, each key once", async () => {
  const server = await TestServer.start();
  try {
    const table = {
      columns: [{ name: "k", type: "integer", is_nullable: false }, { name: "v", type: "text" }],
      constraints: { primary_key: { columns: ["k"] } },
    };
    for (const mode of ["skip", "update"]) {
      ok(await server.request("POST", `table/${mode}`, { body: { table } }));
      // Eight batches of 40 keys out of 100, in no order: most keys are in several batches.
      const batches = Array.from(
        { length: 8 },
        (_, b) =>
          Array.from({ length: 40 }, (_, i) => ({ k: (b * 37 + i * 53) % 100, v: `b${b}` })),
      );
      const answers = await Promise.all(
        batches.map((rows) =>
          server.request("POST", `table/${mode}/records?on_conflict=${mode}`, { body: rows })
        ),
      );
      const keys = new Set(batches.flat().map((r) => r.k));
      for (const answer of answers) assert.equal(answer.status, 200, `${mode}: ${answer.text}`);
      const inserted = answers.reduce((n, a) => n + a.body.inserted, 0);
      assert.equal(inserted, keys.size, mode);
      const { total } = ok(await server.request("GET", `table/${mode}/records?limit=0`));
      assert.equal(total, keys.size, mode);
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

onDuckDB.test("loads beyond what DuckDB's memory limit holds at once wait their turn, none fails", async () => {
  // 96 MiB holds one load; each JSON reader alone allocates 32 MiB.
  const server = await TestServer.start({ DUCKDB_MEMORY_LIMIT: "96MiB", DUCKDB_THREADS: "" });
  try {
    const rows = Array.from(
      { length: 100_000 },
      (_, i) => ({ id: i, name: `name ${i}`, x: i / 7 }),
    );
    const json = JSON.stringify({ data: rows });
    const csv = `id,name,x\n${rows.map((r) => `${r.id},${r.name},${r.x}`).join("\n")}\n`;
    const answers = await Promise.all([
      ...[0, 1, 2, 3].map((i) =>
        server.request("POST", `table/j${i}/upload/json`, {
          body: json,
          headers: { "content-type": "application/json" },
        })
      ),
      ...[0, 1].map((i) => {
        const form = uploadForm(new TextEncoder().encode(csv), "rows.csv");
        return server.request("POST", `table/c${i}/upload/csv`, { body: form });
      }),
    ]);
    assert.deepEqual(
      answers.map((a) => [a.status, a.body?.inserted]),
      answers.map(() => [200, 100_000]),
    );
    assert.ok(!server.stderr.includes('"level":"error"'), server.stderr);
  } finally {
    await server.dispose();
  }
});

/** Settles with `promise`, or fails once `ms` pass. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return beforeDeadline(promise, ms, () => new Error(`${what}: still waiting after ${ms} ms`));
}

/** Everything the server sends on `socket` until it closes it or its JSON answer is whole. */
async function answerOn(socket: Deno.Conn): Promise<string> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(4096);
  let text = "";
  for (;;) {
    const read = await socket.read(buffer);
    if (read === null) return text;
    text += decoder.decode(buffer.subarray(0, read), { stream: true });
    if (/\r\n\r\n[\s\S]*\}\}$/.test(text)) return text;
  }
}

Deno.test("a body that trickles lets go of its table; one that stops is answered 408", async () => {
  const server = await TestServer.start({ BODY_IDLE_SECONDS: "1" });
  let socket: Deno.Conn | undefined;
  let trickling = true;
  try {
    ok(
      await server.request("POST", "table/t", {
        body: { table: { columns: [{ name: "id", type: "integer" }] } },
      }),
    );
    // More than one 32 MiB part: the load begins, in a transaction under the table's lock,
    // while the rest of the body is still to come.
    const start = `[${'{"id":1},'.repeat(4_000_000)}`;
    socket = await server.rawPost(
      "/api/v1/table/t/records",
      `Content-Type: application/json\r\nContent-Length: ${start.length + 1000}\r\n\r\n${start}`,
    );
    // On PostgreSQL a load spools its whole body before it takes the table's lock
    // (docs/api.md): there is no transaction to wait for, and DDL does not wait at all.
    if (ENGINE !== "postgres") {
      await within(
        (async () => {
          while (await openTransactions(server) === 0) {
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
        10_000,
        "the load's transaction",
      );
    }

    // A space every 300 ms: never idle for a second, never done.
    const trickle = (async () => {
      while (trickling) {
        await socket!.write(new TextEncoder().encode(" "));
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    // DDL on the table waits for the load only until its next part is late.
    const dropped = await within(server.request("DELETE", "table/t"), 10_000, "DELETE");
    assert.equal(dropped.status, 200);
    trickling = false;
    await trickle;

    // Once the bytes stop, the body is idle: 408 in the error shape.
    const text = await within(answerOn(socket), 10_000, "the answer");
    assert.match(text, /^HTTP\/1\.1 408 /);
    assert.match(text, /"code":408,"type":"request_timeout"/);
  } finally {
    trickling = false;
    // Hung up first: a stalled request would hold up the server's graceful stop.
    socket?.close();
    await server.dispose();
  }
});

Deno.test("a JSON body that stops on POST or PUT /table/{name} is answered 408 and changes nothing", async () => {
  const server = await TestServer.start({ BODY_IDLE_SECONDS: "1" });
  const sockets: Deno.Conn[] = [];
  try {
    const table = { columns: [{ name: "id", type: "integer" }] };
    ok(await server.request("POST", "table/kept", { body: { table } }));
    const before = await snapshot(server);
    for (const [method, path] of [["POST", "table/made"], ["PUT", "table/kept"]]) {
      // Headers, a length, and part of the body; then nothing more.
      const socket = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      sockets.push(socket);
      const head = `${method} /api/v1/${path} HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${server.token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: 100\r\n\r\n{"table": {"columns": [`;
      await socket.write(new TextEncoder().encode(head));
      const text = await within(answerOn(socket), 10_000, `the answer to ${method} ${path}`);
      assert.match(text, /^HTTP\/1\.1 408 /, `${method} ${path}`);
      assert.match(text, /"code":408,"type":"request_timeout"/);
    }
    assert.deepEqual(await snapshot(server), before);
  } finally {
    for (const socket of sockets) socket.close();
    await server.dispose();
  }
});

/** Transactions open in the service now, by its /metrics. */
async function openTransactions(server: TestServer): Promise<number> {
  const metrics = samples((await server.request("GET", "/metrics")).text);
  return value(metrics, "table_service_open_transactions");
}
