import assert from "node:assert/strict";
import { createApp } from "../src/http/app.ts";
import { createVerifier } from "../src/auth/jwt.ts";
import { createLogger } from "../src/log.ts";
import { withTempStore } from "./helpers/store.ts";
import { ALL_SCOPES, type Answer, mint, TEST_SECRET } from "./helpers/server.ts";

const HOUR = 60 * 60 * 1000;

/** The app in process over a fresh store, its clock moved by `advance`. */
async function withApp(
  work: (app: {
    send(
      method: string,
      path: string,
      options?: {
        body?: BodyInit | unknown;
        key?: string;
        token?: string;
        type?: string;
        ifMatch?: string;
      },
    ): Promise<Answer>;
    advance(ms: number): void;
  }) => Promise<void>,
): Promise<void> {
  const token = await mint({ scope: ALL_SCOPES });
  await withTempStore(async (store, dir) => {
    let now = Date.now();
    const app = createApp({
      store,
      verifier: await createVerifier({ key: { kind: "hmac", secret: TEST_SECRET } }),
      logger: createLogger("error", () => {}),
      maxJsonBytes: 1 << 20,
      maxUploadBytes: 1 << 24,
      maxSheetRows: 1000,
      maxSheetBytes: 1 << 24,
      spoolDir: dir,
      metricsAccess: "token",
      bodyIdleMs: 30_000,
      queryTimeoutMs: 30_000,
      corsOrigins: [],
      now: () => now,
    });
    await work({
      async send(method, path, options = {}) {
        const headers: Record<string, string> = {
          authorization: `Bearer ${options.token ?? token}`,
        };
        if (options.key !== undefined) headers["idempotency-key"] = options.key;
        let body: BodyInit | undefined;
        const given = options.body;
        if (
          typeof given === "string" || given instanceof FormData || given instanceof ReadableStream
        ) {
          body = given;
        } else if (given !== undefined) {
          body = JSON.stringify(given);
          headers["content-type"] = "application/json";
        }
        if (options.type) headers["content-type"] = options.type;
        if (options.ifMatch) headers["if-match"] = options.ifMatch;
        const response = await app.request(`/api/v1/${path}`, { method, headers, body });
        const text = await response.text();
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          // Not JSON.
        }
        return { status: response.status, headers: response.headers, body: parsed, text };
      },
      advance(ms) {
        now += ms;
      },
    });
  });
}

const LOG = {
  table: { columns: [{ name: "id", type: "bigint" }, { name: "note", type: "text" }] },
};

Deno.test("Idempotency-Key: a repeated insert of records gets the first answer and inserts once", async () => {
  await withApp(async ({ send }) => {
    assert.equal((await send("POST", "table/log", { body: LOG })).status, 200);
    const rows = [{ id: 1, note: "a" }, { id: 2, note: "b" }];
    const first = await send("POST", "table/log/records", { body: rows, key: "insert-1" });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get("idempotent-replayed"), null);
    const again = await send("POST", "table/log/records", { body: rows, key: "insert-1" });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal((await send("GET", "table/log/records")).body.total, 2);
  });
});

Deno.test("Idempotency-Key: the same key with another body or query is 409 and changes nothing", async () => {
  await withApp(async ({ send }) => {
    await send("POST", "table/log", { body: LOG });
    await send("POST", "table/log/records", { body: [{ id: 1 }], key: "k" });
    const other = await send("POST", "table/log/records", { body: [{ id: 2 }], key: "k" });
    assert.equal(other.status, 409, other.text);
    assert.equal(other.body.error.type, "idempotency_key_reused");
    assert.match(other.body.error.message, /Idempotency key "k" was used for a different request/);
    const query = await send("POST", "table/log/records?on_conflict=skip", {
      body: [{ id: 1 }],
      key: "k",
    });
    assert.equal(query.status, 409, query.text);
    assert.equal((await send("GET", "table/log/records")).body.total, 1);
  });
});

Deno.test("Idempotency-Key: the same key and body with another content type or If-Match is 409", async () => {
  await withApp(async ({ send }) => {
    const created = await send("POST", "table/log", { body: LOG, key: "create" });
    assert.equal(created.status, 200, created.text);
    // Sent fresh as text/plain the request is 415: its retry must not be answered 200.
    const plain = await send("POST", "table/log", {
      body: JSON.stringify(LOG),
      key: "create",
      type: "text/plain",
    });
    assert.equal(plain.status, 409, plain.text);
    assert.equal(plain.body.error.type, "idempotency_key_reused");
    // A parameter of the same media type is the same request.
    const charset = await send("POST", "table/log", {
      body: JSON.stringify(LOG),
      key: "create",
      type: "application/json; charset=utf-8",
    });
    assert.equal(charset.status, 200, charset.text);
    assert.equal(charset.headers.get("idempotent-replayed"), "true");

    const tag = created.headers.get("etag")!;
    const wanted = { table: { ...created.body.table, name: "journal" } };
    const rename = (ifMatch: string) =>
      send("PUT", "table/log", { body: wanted, key: "rename", ifMatch });
    const renamed = await rename(tag);
    assert.equal(renamed.status, 200, renamed.text);
    // Sent fresh, it would be 409 for its stale tag: its retry must not be replayed.
    const other = await rename('"another-version"');
    assert.equal(other.status, 409, other.text);
    assert.equal(other.body.error.type, "idempotency_key_reused");
  });
});

Deno.test("Idempotency-Key: another key, or another token subject, inserts again", async () => {
  await withApp(async ({ send }) => {
    await send("POST", "table/log", { body: LOG });
    const rows = [{ id: 1 }];
    assert.equal((await send("POST", "table/log/records", { body: rows, key: "a" })).status, 200);
    assert.equal((await send("POST", "table/log/records", { body: rows, key: "b" })).status, 200);
    const other = await mint({ scope: ALL_SCOPES, sub: "someone-else" });
    const theirs = await send("POST", "table/log/records", { body: rows, key: "a", token: other });
    assert.equal(theirs.headers.get("idempotent-replayed"), null);
    assert.equal((await send("GET", "table/log/records")).body.total, 3);
  });
});

Deno.test("Idempotency-Key: a token of the same subject that may not write, or not there, gets no replay", async () => {
  await withApp(async ({ send }) => {
    await send("POST", "table/log", { body: LOG });
    const rows = [{ id: 1 }];
    assert.equal((await send("POST", "table/log/records", { body: rows, key: "a" })).status, 200);
    const reader = await mint({ scope: "tables:read" });
    const unscoped = await send("POST", "table/log/records", {
      body: rows,
      key: "a",
      token: reader,
    });
    assert.equal(unscoped.status, 403, unscoped.text);
    const elsewhere = await mint({ scope: ALL_SCOPES, schemas: ["sales"] });
    const confined = await send("POST", "table/log/records", {
      body: rows,
      key: "a",
      token: elsewhere,
    });
    assert.equal(confined.status, 403, confined.text);
    assert.equal(confined.headers.get("idempotent-replayed"), null);
    // A fresh token with the same claims is the same client retrying.
    const same = await mint({ scope: ALL_SCOPES });
    const retry = await send("POST", "table/log/records", { body: rows, key: "a", token: same });
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.equal((await send("GET", "table/log/records")).body.total, 1);
  });
});

Deno.test("Idempotency-Key: a key is forgotten after 24 hours", async () => {
  await withApp(async ({ send, advance }) => {
    await send("POST", "table/log", { body: LOG });
    const rows = [{ id: 1 }];
    await send("POST", "table/log/records", { body: rows, key: "day" });
    advance(23 * HOUR);
    const within = await send("POST", "table/log/records", { body: rows, key: "day" });
    assert.equal(within.headers.get("idempotent-replayed"), "true");
    advance(2 * HOUR);
    const after = await send("POST", "table/log/records", { body: [{ id: 9 }], key: "day" });
    assert.equal(after.status, 200, after.text);
    assert.equal(after.headers.get("idempotent-replayed"), null);
    assert.equal((await send("GET", "table/log/records")).body.total, 2);
  });
});

Deno.test("Idempotency-Key: a key that is not 1-255 visible ASCII characters is 400", async () => {
  await withApp(async ({ send }) => {
    await send("POST", "table/log", { body: LOG });
    for (const key of ["", "has space", "x".repeat(256), "caf\u00e9"]) {
      const answer = await send("POST", "table/log/records", { body: [{ id: 1 }], key });
      assert.equal(answer.status, 400, `${JSON.stringify(key)}: ${answer.text}`);
      assert.match(answer.body.error.message, /Idempotency key ".*" is not 1 to 255 visible/);
    }
    assert.equal((await send("GET", "table/log/records")).body.total, 0);
    const longest = await send("POST", "table/log/records", {
      body: [{ id: 1 }],
      key: "~".repeat(255),
    });
    assert.equal(longest.status, 200, longest.text);
  });
});

Deno.test("Idempotency-Key: a request while one with the same key runs is 409 in use", async () => {
  await withApp(async ({ send }) => {
    await send("POST", "table/log", { body: LOG });
    let reading!: () => void;
    const started = new Promise<void>((resolve) => reading = resolve);
    let release!: () => void;
    const released = new Promise<void>((resolve) => release = resolve);
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        reading();
        await released;
        controller.enqueue(new TextEncoder().encode(JSON.stringify([{ id: 1 }])));
        controller.close();
      },
    }, { highWaterMark: 0 });
    const first = send("POST", "table/log/records", {
      body,
      key: "slow",
      type: "application/json",
    });
    await started;
    const second = await send("POST", "table/log/records", { body: [{ id: 1 }], key: "slow" });
    assert.equal(second.status, 409, second.text);
    assert.equal(second.body.error.type, "idempotency_key_in_use");
    release();
    assert.equal((await first).status, 200);
    const third = await send("POST", "table/log/records", { body: [{ id: 1 }], key: "slow" });
    assert.equal(third.headers.get("idempotent-replayed"), "true");
    assert.equal((await send("GET", "table/log/records")).body.total, 1);
  });
});

Deno.test("Idempotency-Key: concurrent keyed inserts grouped together each keep their answer", async () => {
  await withApp(async ({ send }) => {
    await send("POST", "table/log", { body: LOG });
    const batch = (i: number) => [{ id: 2 * i, note: "x" }, { id: 2 * i + 1, note: "y" }];
    const sendAll = () =>
      Promise.all(
        Array.from(
          { length: 20 },
          (_, i) => send("POST", "table/log/records", { body: batch(i), key: `g${i}` }),
        ),
      );
    const first = await sendAll();
    assert.deepEqual(first.map((a) => a.status), Array(20).fill(200));
    const again = await sendAll();
    assert.deepEqual(
      again.map((a) => a.headers.get("idempotent-replayed")),
      Array(20).fill("true"),
    );
    assert.deepEqual(again.map((a) => a.body), first.map((a) => a.body));
    assert.equal((await send("GET", "table/log/records")).body.total, 40);
  });
});

Deno.test("Idempotency-Key: an upload retried with a new multipart boundary is replayed", async () => {
  await withApp(async ({ send }) => {
    const form = () => {
      const data = new FormData();
      data.append("file", new File(["id,name\n1,Ada\n2,Grace\n"], "people.csv"));
      return data;
    };
    const first = await send("POST", "table/people/upload/csv", { body: form(), key: "csv" });
    assert.equal(first.status, 200, first.text);
    const again = await send("POST", "table/people/upload/csv", { body: form(), key: "csv" });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(again.body, first.body);
    const other = new FormData();
    other.append("file", new File(["id,name\n3,Edsger\n"], "people.csv"));
    const changed = await send("POST", "table/people/upload/csv", { body: other, key: "csv" });
    assert.equal(changed.status, 409, changed.text);
    assert.equal((await send("GET", "table/people/records")).body.total, 2);
  });
});

Deno.test("Idempotency-Key: a JSON upload retried replaces once", async () => {
  await withApp(async ({ send }) => {
    const body = { data: [{ id: 1 }, { id: 2 }] };
    const path = "table/up/upload/json?if_exists=append";
    const first = await send("POST", path, { body, key: "json" });
    assert.equal(first.status, 200, first.text);
    const again = await send("POST", path, { body, key: "json" });
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(again.body, first.body);
    assert.equal((await send("GET", "table/up/records")).body.total, 2);
  });
});

Deno.test("Idempotency-Key: table, schema and template writes are replayed, not redone", async () => {
  await withApp(async ({ send }) => {
    const created = await send("POST", "table/t", { body: LOG, key: "create" });
    assert.equal(created.status, 200, created.text);
    const again = await send("POST", "table/t", { body: LOG, key: "create" });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, created.body);
    assert.equal(again.headers.get("etag"), created.headers.get("etag"));

    const wanted = { table: { ...created.body.table, name: "t2" } };
    const renamed = await send("PUT", "table/t", { body: wanted, key: "rename" });
    assert.equal(renamed.status, 200, renamed.text);
    const renamedAgain = await send("PUT", "table/t", { body: wanted, key: "rename" });
    assert.equal(renamedAgain.status, 200, renamedAgain.text);
    assert.deepEqual(renamedAgain.body, renamed.body);

    const dropped = await send("DELETE", "table/t2", { key: "drop" });
    assert.equal(dropped.status, 200, dropped.text);
    const droppedAgain = await send("DELETE", "table/t2", { key: "drop" });
    assert.equal(droppedAgain.status, 200, droppedAgain.text);
    assert.deepEqual(droppedAgain.body, dropped.body);

    for (const method of ["POST", "DELETE"]) {
      const first = await send(method, "schema/s", { key: "schema" });
      assert.equal(first.status, 200, first.text);
      const repeat = await send(method, "schema/s", { key: "schema" });
      assert.equal(repeat.headers.get("idempotent-replayed"), "true", repeat.text);
    }

    const template = { version: "1.0", table: { columns: [{ name: "a", type: "int" }] } };
    const stored = await send("POST", "table_template/tpl", { body: template, key: "tpl" });
    assert.equal(stored.status, 200, stored.text);
    const storedAgain = await send("POST", "table_template/tpl", { body: template, key: "tpl" });
    assert.deepEqual(storedAgain.body, stored.body);
    const gone = await send("DELETE", "table_template/tpl", { key: "tpl" });
    assert.equal(gone.status, 200, gone.text);
    const goneAgain = await send("DELETE", "table_template/tpl", { key: "tpl" });
    assert.equal(goneAgain.headers.get("idempotent-replayed"), "true", goneAgain.text);
  });
});

Deno.test("Idempotency-Key: a write that failed keeps no answer, so its retry runs again", async () => {
  await withApp(async ({ send }) => {
    const missing = await send("POST", "table/later/records", { body: [{ id: 1 }], key: "r" });
    assert.equal(missing.status, 404, missing.text);
    await send("POST", "table/later", { body: LOG });
    const retried = await send("POST", "table/later/records", { body: [{ id: 1 }], key: "r" });
    assert.equal(retried.status, 200, retried.text);
    assert.equal((await send("GET", "table/later/records")).body.total, 1);
  });
});

Deno.test("Idempotency-Key: the OpenAPI document lists the header on every write that takes it", async () => {
  await withApp(async ({ send }) => {
    const document = (await send("GET", "openapi.json")).body;
    assert.equal(document.components.parameters.IdempotencyKey.in, "header");
    const writes = [
      ["post", "/table/{table_name}/records"],
      ["post", "/table/{table_name}/upload/json"],
      ["post", "/table/{table_name}/upload/csv"],
      ["post", "/table/{table_name}/upload/excel"],
      ["post", "/table/{table_name}"],
      ["put", "/table/{table_name}"],
      ["delete", "/table/{table_name}"],
      ["post", "/schema/{schema_name}"],
      ["delete", "/schema/{schema_name}"],
      ["post", "/table_template/{table_template_name}"],
      ["delete", "/table_template/{table_template_name}"],
    ];
    for (const [method, path] of writes) {
      const parameters = document.paths[`/api/v1${path}`][method!].parameters;
      assert.ok(
        parameters.some((p: { $ref?: string }) =>
          p.$ref === "#/components/parameters/IdempotencyKey"
        ),
        `${method} ${path}`,
      );
    }
  });
});
