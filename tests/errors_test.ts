import assert from "node:assert/strict";
import { errorOf, ok, TestServer } from "./helpers/server.ts";

Deno.test("errors: every failure has the contract's shape", async (t) => {
  const server = await TestServer.start({ MAX_JSON_BYTES: "4096" });
  try {
    await t.step("an unknown route is 404, with or without the API prefix", async () => {
      errorOf(await server.request("GET", "nothing/here"), 404);
      errorOf(await server.request("GET", "/nothing"), 404);
      errorOf(await server.request("GET", "table/a/b/c/d"), 404);
    });

    await t.step("a wrong method on a known path is 405 with Allow", async () => {
      const answer = await server.request("PATCH", "table/users");
      errorOf(answer, 405);
      assert.equal(answer.headers.get("allow"), "DELETE, GET, HEAD, POST, PUT");
      const schema = await server.request("PUT", "schema");
      errorOf(schema, 405);
      assert.equal(schema.headers.get("allow"), "GET, HEAD");
    });

    await t.step("malformed or truncated JSON is 400", async () => {
      for (const body of ['{"table":', "{table: 1}", "[1,", "nul", '{"a":1}}', "\u0000"]) {
        errorOf(
          await server.request("POST", "table/t", {
            body,
            headers: { "content-type": "application/json" },
          }),
          400,
        );
      }
    });

    await t.step("a body that is not JSON by content type is 415", async () => {
      for (const type of ["text/plain", "application/xml", "multipart/form-data; boundary=x"]) {
        errorOf(
          await server.request("POST", "table/t", {
            body: "{}",
            headers: { "content-type": type },
          }),
          415,
        );
      }
    });

    await t.step("a body over MAX_JSON_BYTES is 413, declared or streamed", async () => {
      const big = JSON.stringify({
        table: { columns: [{ name: "a", type: "int", default: "x".repeat(5000) }] },
      });
      errorOf(
        await server.request("POST", "table/t", {
          body: big,
          headers: { "content-type": "application/json" },
        }),
        413,
      );
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          controller.close();
        },
      });
      const response = await fetch(`${server.base}/api/v1/table/t`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: stream,
      });
      assert.equal(response.status, 413);
      assert.equal((await response.json()).error.code, 413);
      errorOf(await server.request("GET", "table/t"), 404);
      // Tables named like the streamed routes' last segment are still definitions.
      for (const name of ["records", "upload"]) {
        errorOf(
          await server.request("POST", `table/${name}`, {
            body: big,
            headers: { "content-type": "application/json" },
          }),
          413,
        );
        errorOf(await server.request("GET", `table/${name}`), 404);
      }
    });

    await t.step("X-Request-Id is echoed when given and generated otherwise", async () => {
      const echoed = await server.request("GET", "table", {
        headers: { "x-request-id": "abc-123" },
      });
      assert.equal(echoed.headers.get("x-request-id"), "abc-123");
      const generated = await server.request("GET", "table/missing");
      assert.match(generated.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
    });

    await t.step("health endpoints are public", async () => {
      assert.deepEqual(ok(await server.request("GET", "/healthz", { token: null })), {
        status: "ok",
      });
      assert.deepEqual(ok(await server.request("GET", "/readyz", { token: null })), {
        status: "ready",
      });
    });
  } finally {
    await server.dispose();
  }
});
