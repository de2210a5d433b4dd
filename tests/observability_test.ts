import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { ConfigError, parseConfig } from "../src/config.ts";
import { ENGINE } from "./helpers/engine.ts";
import { samples, value } from "./helpers/metrics.ts";
import { type Answer, errorOf, ok, seededRandom, TestServer } from "./helpers/server.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const UPLOAD = "/api/v1/table/:table_name/upload/json";
const RECORDS = "/api/v1/table/:table_name/records";
const EXPORT = "/api/v1/table/:table_name/records/csv";

const bytes = (text: string) => new TextEncoder().encode(text).byteLength;

/** The service's request log lines so far, parsed. */
function requestLines(server: TestServer): Json[] {
  // Only whole lines: the last one may still be arriving.
  return server.stderr.slice(0, server.stderr.lastIndexOf("\n") + 1).split("\n")
    .filter((line) => line.includes('"message":"request"'))
    .map((line) => JSON.parse(line));
}

/** Waits until the service has logged `count` requests (its output arrives on its own time). */
async function loggedRequests(server: TestServer, count: number): Promise<Json[]> {
  for (let waited = 0; waited < 5000; waited += 20) {
    const lines = requestLines(server);
    if (lines.length >= count) return lines;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`expected ${count} request lines, got:\n${server.stderr}`);
}

/** A body sent without Content-Length, in chunks. */
function chunked(text: string): ReadableStream<Uint8Array> {
  const data = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= data.length) return controller.close();
      controller.enqueue(data.slice(at, at + 7));
      at += 7;
    },
  });
}

Deno.test("observability: one JSON log line per request, with what it moved", async (t) => {
  const server = await TestServer.start({ LOG_LEVEL: "info" });
  try {
    const upload = JSON.stringify({ data: [{ id: 1, name: "Ada" }, { id: 2, name: "Grace" }] });
    const insert = JSON.stringify([{ id: 3, name: "Edsger" }, { id: 4, name: "Barbara" }]);
    const answers: Answer[] = [];
    answers.push(
      await server.request("POST", "/api/v1/table/people/upload/json", {
        body: upload,
        headers: { "content-type": "application/json", "x-request-id": "load-1" },
      }),
    );
    answers.push(
      await server.request("POST", "/api/v1/table/people/records", {
        body: chunked(insert),
        headers: { "content-type": "application/json", "x-request-id": "has space" },
      }),
    );
    // Uncompressed, so the bytes sent are the text's (fetch would take a compressed one).
    answers.push(
      await server.request("GET", "/api/v1/table/people/records/csv", {
        headers: { "accept-encoding": "identity" },
      }),
    );
    answers.push(await server.request("GET", "/api/v1/nothing-here"));
    answers.push(await server.request("GET", "/api/v1/table", { token: "not-a-token" }));
    answers.push(await server.request("GET", "/nothing-here", { token: null }));
    answers.push(await server.request("POST", "/healthz", { token: null, body: "{}" }));
    const lines = await loggedRequests(server, answers.length);

    await t.step("exactly one line per request, each with the response's request id", () => {
      assert.equal(lines.length, answers.length);
      lines.forEach((line, i) => {
        assert.equal(line.level, "info");
        assert.equal(line.request_id, answers[i]!.headers.get("x-request-id"));
        assert.equal(line.status, answers[i]!.status);
        assert.equal(typeof line.duration_ms, "number");
        assert.ok(line.duration_ms >= 0);
        assert.equal(line.bytes_out, bytes(answers[i]!.text), `bytes out of ${line.path}`);
      });
      assert.equal(lines[0].request_id, "load-1", "a sane X-Request-Id is kept");
      assert.match(lines[1].request_id, /^[0-9a-f-]{36}$/, "an odd one is replaced");
    });

    await t.step("a load tells its route, bytes in, subject and rows", () => {
      assert.deepEqual(
        [lines[0].method, lines[0].route, lines[0].path, lines[0].subject, lines[0].rows_loaded],
        ["POST", UPLOAD, "/api/v1/table/people/upload/json", "tester", 2],
      );
      assert.equal(lines[0].bytes_in, bytes(upload));
      // Sent in chunks without a length: the bytes are counted as they are read.
      assert.equal(lines[1].route, RECORDS);
      assert.equal(lines[1].bytes_in, bytes(insert));
      assert.equal(lines[1].rows_loaded, 2);
    });

    await t.step("a streamed export is logged with every byte it sent", () => {
      assert.equal(lines[2].route, EXPORT);
      assert.equal(answers[2]!.text.split("\n").length, 6, "header, 4 rows, final newline");
      assert.equal(lines[2].bytes_out, bytes(answers[2]!.text));
      assert.equal(lines[2].rows_loaded, 0);
    });

    await t.step("failures: unmatched routes and unknown subjects are said so", () => {
      assert.deepEqual([lines[3].route, lines[3].status, lines[3].subject], [
        "unmatched",
        404,
        "tester",
      ]);
      assert.deepEqual([lines[4].status, lines[4].subject], [401, null]);
      // Outside /api/v1 no route but the observer's matches: still one line each.
      assert.deepEqual([lines[5].route, lines[5].status], ["unmatched", 404]);
      assert.deepEqual([lines[6].route, lines[6].status], ["unmatched", 405]);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("observability: probes and scrapes that succeed are logged at debug, failures at info", async (t) => {
  for (const level of ["info", "debug"]) {
    await t.step(`at LOG_LEVEL=${level}`, async () => {
      const server = await TestServer.start({ LOG_LEVEL: level });
      try {
        const probes = [
          await server.request("GET", "/healthz", { token: null }),
          await server.request("GET", "/readyz", { token: null }),
          await server.request("GET", "/metrics"),
        ];
        assert.deepEqual(probes.map((a) => a.status), [200, 200, 200]);
        // A failed scrape (no token) and a table read, after the probes: the log is in order.
        const failed = await server.request("GET", "/metrics", { token: null });
        assert.equal(failed.status, 401);
        ok(await server.request("GET", "/api/v1/table"));
        const lines = await loggedRequests(server, level === "debug" ? 5 : 2);
        const seen = lines.map((l) => [l.route, l.status, l.level]);
        const probeLines = ["/healthz", "/readyz", "/metrics"].map((r) => [r, 200, "debug"]);
        assert.deepEqual(seen, [
          ...(level === "debug" ? probeLines : []),
          ["/metrics", 401, "info"],
          ["/api/v1/table", 200, "info"],
        ]);
        if (level === "debug") assert.equal(lines[0].subject, null, "no token, no subject");
      } finally {
        await server.dispose();
      }
    });
  }
});

Deno.test("observability: a client gone mid-body is logged as 499, not as a failure", async () => {
  const server = await TestServer.start({ LOG_LEVEL: "info" });
  try {
    const boundary = "b0und";
    const cases = [
      ["/api/v1/table/people/records", "application/json", '[{"id": 1},'],
      ["/api/v1/table/people/upload/json", "application/json", '{"data": [{"id": 1},'],
      [
        "/api/v1/table/sheet/upload/csv",
        `multipart/form-data; boundary=${boundary}`,
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n` +
        `Content-Type: text/csv\r\n\r\na,b\n1,2\n`,
      ],
      // A JSON body read whole by the route's validator, not by the spool.
      ["/api/v1/table/people", "application/json", '{"table": {"columns": ['],
    ];
    // Each body once with a length it never reaches, once chunked with its last chunk cut off.
    const framings = [
      (start: string) => `Content-Length: 1000000\r\n\r\n${start}`,
      (start: string) =>
        `Transfer-Encoding: chunked\r\n\r\n${start.length.toString(16)}\r\n${start}\r\n` +
        `100\r\n{`,
    ];
    for (const framing of framings) {
      for (const [path, type, start] of cases) {
        // Sends the start and hangs up once the service is reading.
        const socket = await server.rawPost(path!, `Content-Type: ${type}\r\n${framing(start!)}`);
        await new Promise((r) => setTimeout(r, 200));
        socket.close();
      }
    }
    const lines = await loggedRequests(server, cases.length * framings.length);
    assert.deepEqual(
      lines.map((l) => [l.path, l.status]),
      [...cases, ...cases].map(([path]) => [path, 499]),
    );
    assert.ok(!server.stderr.includes('"level":"error"'), server.stderr);
    const metrics = samples((await server.request("GET", "/metrics")).text);
    assert.equal(
      value(metrics, "table_service_http_requests_total", { route: RECORDS, status: "499" }),
      2,
    );
    assert.ok(ok(await server.request("GET", "/api/v1/table")).tables.length === 0);
  } finally {
    await server.dispose();
  }
});

Deno.test("observability: a client that stops sending mid-body but still listens gets 400, never 499", async () => {
  const server = await TestServer.start({ LOG_LEVEL: "info" });
  try {
    const starts = {
      "/api/v1/table/people": '{"table": {"columns": [',
      "/api/v1/table/people/records": '[{"id": 1},',
      "/api/v1/table/people/upload/json": '{"data": [{"id": 1},',
    };
    const paths = Object.keys(starts);
    const answers: [string, string][] = [];
    for (const [path, start] of Object.entries(starts)) {
      const socket = await server.rawPost(
        path,
        `Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n${start}`,
      );
      // Once the service is reading, the client closes its sending half only, and listens.
      await new Promise((r) => setTimeout(r, 200));
      await socket.closeWrite();
      const buffer = new Uint8Array(4096);
      let text = "";
      for (let read; (read = await socket.read(buffer)) !== null;) {
        text += new TextDecoder().decode(buffer.subarray(0, read));
      }
      socket.close();
      answers.push([path, text]);
    }
    for (const [path, text] of answers) {
      assert.match(text, /^HTTP\/1\.1 400 /, path);
      assert.match(text, /"code":400,"type":"bad_request"/, path);
    }
    // The log says what happened: the client closed its request before the body was in.
    const lines = await loggedRequests(server, paths.length);
    assert.deepEqual(lines.map((l) => [l.path, l.status]), paths.map((path) => [path, 499]));
    assert.ok(ok(await server.request("GET", "/api/v1/table")).tables.length === 0);
  } finally {
    await server.dispose();
  }
});

Deno.test("observability: a chunked body with broken framing is logged as 400, not a hang-up", async () => {
  const server = await TestServer.start({ LOG_LEVEL: "info" });
  try {
    const paths = ["/api/v1/table/people", "/api/v1/table/people/records"];
    for (const path of paths) {
      // A first chunk, then "zz", which is no chunk size.
      const socket = await server.rawPost(
        path,
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[{\r\n",
      );
      // Once the service is reading.
      await new Promise((r) => setTimeout(r, 200));
      await socket.write(new TextEncoder().encode("zz\r\n"));
      // The connection cannot carry an answer after broken framing: the server closes it.
      const buffer = new Uint8Array(4096);
      while (await socket.read(buffer) !== null) { /* drain until closed */ }
      socket.close();
    }
    const lines = await loggedRequests(server, paths.length);
    assert.deepEqual(lines.map((l) => [l.path, l.status]), paths.map((path) => [path, 400]));
    assert.ok(!server.stderr.includes('"level":"error"'), server.stderr);
  } finally {
    await server.dispose();
  }
});

/** The open-transactions gauge once it stops falling (ended work is released asynchronously). */
async function settledTransactions(server: TestServer): Promise<number> {
  let open = -1;
  for (let waited = 0; waited < 5000 && open !== 0; waited += 20) {
    open = value(
      samples((await server.request("GET", "/metrics")).text),
      "table_service_open_transactions",
    );
    if (open !== 0) await new Promise((r) => setTimeout(r, 20));
  }
  return open;
}

Deno.test("observability: /metrics counts requests, latency, rows, bytes and transactions", async (t) => {
  const server = await TestServer.start({ LOG_LEVEL: "info" });
  try {
    await t.step("it needs a token by default", async () => {
      errorOf(await server.request("GET", "/metrics", { token: null }), 401);
    });

    const upload = JSON.stringify({ data: Array.from({ length: 5 }, (_, i) => ({ n: i })) });
    ok(
      await server.request("POST", "/api/v1/table/numbers/upload/json", {
        body: upload,
        headers: { "content-type": "application/json" },
      }),
    );
    const inserts = ['[{"n": 10}]', '[{"n": 11}, {"n": 12}, {"n": 13}]'];
    for (const body of inserts) {
      ok(
        await server.request("POST", "/api/v1/table/numbers/records", {
          body,
          headers: { "content-type": "application/json" },
        }),
      );
    }
    errorOf(
      await server.request("POST", "/api/v1/table/numbers/records", {
        body: '[{"n": "not a number"}]',
        headers: { "content-type": "application/json" },
      }),
      422,
    );

    const answer = await server.request("GET", "/metrics");
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const all = samples(answer.text);

    await t.step("requests by route and status", () => {
      const requests = "table_service_http_requests_total";
      assert.equal(value(all, requests, { route: UPLOAD, status: "200" }), 1);
      assert.equal(value(all, requests, { route: RECORDS, status: "200" }), 2);
      assert.equal(value(all, requests, { route: RECORDS, status: "422" }), 1);
      assert.equal(value(all, requests, { route: "/metrics", status: "401" }), 1);
    });

    await t.step("the latency histogram is cumulative and counts every request", () => {
      const name = "table_service_http_request_duration_seconds";
      const buckets = all.filter((s) => s.name === `${name}_bucket` && s.labels.route === RECORDS);
      assert.equal(buckets.length, 16);
      assert.equal(buckets.at(-1)!.labels.le, "+Inf");
      for (let i = 1; i < buckets.length; i++) {
        assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, "cumulative");
      }
      assert.equal(buckets.at(-1)!.value, 3);
      assert.equal(value(all, `${name}_count`, { route: RECORDS }), 3);
      assert.ok(value(all, `${name}_sum`, { route: RECORDS }) > 0);
    });

    await t.step("rows loaded and bytes uploaded, per load route", () => {
      assert.equal(value(all, "table_service_rows_loaded_total", { route: UPLOAD }), 5);
      assert.equal(value(all, "table_service_rows_loaded_total", { route: RECORDS }), 4);
      assert.equal(
        value(all, "table_service_uploaded_bytes_total", { route: UPLOAD }),
        bytes(upload),
      );
      assert.equal(
        value(all, "table_service_uploaded_bytes_total", { route: RECORDS }),
        inserts.reduce((sum, body) => sum + bytes(body), 0) + bytes('[{"n": "not a number"}]'),
      );
    });

    await t.step("open transactions: one while an export is being read, none after", async () => {
      assert.equal(value(all, "table_service_open_transactions"), 0);
      // Enough rows that the export cannot all sit in the sockets' buffers at once.
      const wide = "x".repeat(200);
      const rows = JSON.stringify({ data: Array.from({ length: 150_000 }, () => [wide]) });
      ok(
        await server.request("POST", "/api/v1/table/wide/upload/json", {
          body: JSON.stringify({
            table: { columns: [{ name: "text", type: "VARCHAR" }] },
            data: [],
          }).replace('"data":[]', rows.slice(1, -1)),
          headers: { "content-type": "application/json" },
        }),
      );
      const exporting = await fetch(`${server.base}/api/v1/table/wide/records/csv`, {
        headers: { authorization: `Bearer ${server.token}` },
      });
      const reader = exporting.body!.getReader();
      await reader.read();
      const during = samples((await server.request("GET", "/metrics")).text);
      assert.equal(value(during, "table_service_open_transactions"), 1);
      await reader.cancel();
      assert.equal(await settledTransactions(server), 0);

      // The export cut off by its client is logged once, as aborted, with what was sent.
      const exports = (await loggedRequests(server, 1)).filter((l) => l.route === EXPORT);
      assert.equal(exports.length, 1);
      assert.equal(exports[0].aborted, true);
      assert.ok(exports[0].bytes_out > 0 && exports[0].bytes_out < 150_000 * 201);

      // HEAD runs the GET handler and drops its body: the export it began must end too.
      const head = await server.request("HEAD", "/api/v1/table/wide/records/csv");
      assert.equal(head.status, 200);
      assert.equal(await settledTransactions(server), 0);
    });

    await t.step("a method of no standard name is counted as OTHER", async () => {
      errorOf(await server.request("BREW", "/api/v1/table"), 405);
      const after = samples((await server.request("GET", "/metrics")).text);
      assert.equal(
        value(after, "table_service_http_requests_total", { method: "OTHER", status: "405" }),
        1,
      );
      assert.ok(!after.some((s) => s.labels.method === "BREW"));
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("observability: METRICS_ACCESS=public opens /metrics; the storage memory gauge; the document", async () => {
  const server = await TestServer.start({ METRICS_ACCESS: "public" });
  try {
    const answer = await server.request("GET", "/metrics", { token: null });
    assert.equal(answer.status, 200);
    const memory = samples(answer.text);
    const heap = value(memory, "table_service_js_heap_bytes");
    assert.ok(heap > 0 && heap < value(memory, "process_resident_memory_bytes"));
    // The standard process metrics, none of them a zero left by /proc being closed to the service.
    assert.ok(value(memory, "process_cpu_seconds_total") > 0);
    assert.ok(value(memory, "process_start_time_seconds") > 0);
    assert.ok(value(memory, "nodejs_heap_size_used_bytes") > 0);
    const processBytes = memory.filter((s) => /^process_.*_bytes$/.test(s.name));
    assert.ok(
      processBytes.length > 0 && processBytes.every((s) => s.value > 0),
      processBytes.map((s) => s.name).join(),
    );

    // DuckDB's own count grows as it caches a table's data, here read back by an export;
    // PostgreSQL's is its shared buffers (a setting) and a connection's memory contexts.
    const storage = async () =>
      value(
        samples((await server.request("GET", "/metrics", { token: null })).text),
        "table_service_storage_memory_bytes",
      );
    const before = await storage();
    const rows = Array.from({ length: 200_000 }, (_, i) => [i, `row number ${i}`]);
    ok(
      await server.request("POST", "/api/v1/table/cached/upload/json", {
        body: JSON.stringify({
          table: { columns: [{ name: "n", type: "BIGINT" }, { name: "s", type: "VARCHAR" }] },
          data: rows,
        }),
        headers: { "content-type": "application/json" },
      }),
    );
    const exported = await server.request("GET", "/api/v1/table/cached/records/csv");
    assert.equal(exported.text.split("\n").length, 200_002);
    const after = await storage();
    if (ENGINE === "duckdb") {
      assert.ok(after > before + 1024 ** 2, `storage memory ${before} → ${after} bytes`);
    }
    // What it is held for adds up to that count, and most of it is the table's data.
    const scrape = samples((await server.request("GET", "/metrics", { token: null })).text);
    const uses = scrape.filter((s) => s.name === "table_service_storage_memory_by_use_bytes");
    assert.ok(uses.every((s) => /^[a-z_]+$/.test(s.labels.use ?? "")), JSON.stringify(uses));
    assert.equal(
      uses.reduce((sum, s) => sum + s.value, 0),
      value(scrape, "table_service_storage_memory_bytes"),
    );
    const byUse = Object.fromEntries(uses.map((s) => [s.labels.use, s.value]));
    if (ENGINE === "postgres") {
      assert.deepEqual(Object.keys(byUse).sort(), ["backend_contexts", "shared_buffers"]);
      assert.ok(byUse.shared_buffers! > 1024 ** 2, JSON.stringify(byUse));
    } else {
      assert.ok(byUse.base_table! > 1024 ** 2, JSON.stringify(byUse));
    }

    const doc = ok(await server.request("GET", "openapi.json", { token: null }));
    assert.deepEqual(doc.paths["/metrics"].get.security, []);
  } finally {
    await server.dispose();
  }
  assert.throws(() => parseConfig({ METRICS_ACCESS: "everyone" }), (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /METRICS_ACCESS "everyone" is not one of token, public/);
    return true;
  });
});

Deno.test("observability: a compressed export is logged with the bytes sent, and as aborted when cut off", async () => {
  const server = await TestServer.start({ LOG_LEVEL: "info" });
  try {
    // Random text, so the compressed export is many megabytes: more than the sockets buffer.
    const random = seededRandom(7);
    const hex = () => Math.floor(random() * 2 ** 52).toString(16).padStart(13, "0");
    const rows = Array.from({ length: 250_000 }, () => [hex() + hex() + hex() + hex() + hex()]);
    ok(
      await server.request("POST", "table/noise/upload/json", {
        body: { table: { columns: [{ name: "text", type: "VARCHAR" }] }, data: rows },
      }),
    );
    const get = `GET /api/v1/table/noise/records/csv HTTP/1.1\r\nHost: x\r\n` +
      `Authorization: Bearer ${server.token}\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n`;

    // Whole, through node:http: it takes off the chunked framing and leaves the gzip.
    const whole = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(`${server.base}/api/v1/table/noise/records/csv`, {
        headers: { authorization: `Bearer ${server.token}`, "accept-encoding": "gzip" },
      }, (response) => {
        assert.equal(response.headers["content-encoding"], "gzip");
        let length = 0;
        response.on("data", (chunk: Uint8Array) => length += chunk.byteLength);
        response.on("end", () => resolve(length));
        response.on("error", reject);
      });
      request.on("error", reject);
      request.end();
    });
    const [complete] = (await loggedRequests(server, 2)).filter((l) => l.route === EXPORT);
    assert.equal(complete.bytes_out, whole, "the compressed bytes sent");
    assert.equal(complete.aborted, undefined);

    const socket = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    await socket.write(new TextEncoder().encode(get));
    await socket.read(new Uint8Array(2048));
    socket.close();
    const exports = (await loggedRequests(server, 3)).filter((l) => l.route === EXPORT);
    assert.equal(exports.length, 2);
    assert.equal(exports[1].aborted, true);
    assert.ok(exports[1].bytes_out < whole, `${exports[1].bytes_out} of ${whole}`);
  } finally {
    await server.dispose();
  }
});
