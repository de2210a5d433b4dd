import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { ok, TestServer } from "./helpers/server.ts";

/** An answer read off the wire as it came: no decompression. */
interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly bytes: Uint8Array;
}

/**
 * A request whose answer is left as sent. `fetch` would decompress it and hide what came over
 * the wire; `node:http` does not.
 */
function rawRequest(
  server: TestServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.base}${path}`, { method, headers }, (response) => {
      const chunks: Uint8Array[] = [];
      response.on("data", (chunk: Uint8Array) => chunks.push(chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          bytes: new Uint8Array(Buffer.concat(chunks)),
        }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end();
  });
}

async function decompress(bytes: Uint8Array, format: CompressionFormat): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new DecompressionStream(format));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A definition of `count` text columns: over 1 KiB from about 20, so it is compressed. */
function wide(count: number) {
  return {
    table: {
      columns: Array.from({ length: count }, (_, i) => ({ name: `c${i}`, type: "VARCHAR" })),
    },
  };
}

/** Every `access-control-*` header of an answer. */
function corsHeaders(headers: Headers): string[] {
  return [...headers.keys()].filter((name) => name.startsWith("access-control-"));
}

Deno.test("HTTP: answers are compressed for clients that accept it, and decompress to the same bytes", async (t) => {
  const server = await TestServer.start({});
  try {
    const rows = Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `person ${i}` }));
    ok(await server.request("POST", "table/people/upload/json", { body: { data: rows } }));
    ok(await server.request("POST", "table/wide", { body: wide(40) }));
    const auth = { authorization: `Bearer ${server.token}` };

    // Whether each is compressed as it is sent: an export is, and so is an answer given whole
    // of more than 256 KiB; any other is compressed whole, with its length.
    for (
      const [path, streamed] of [
        ["/api/v1/openapi.json", false],
        ["/api/v1/table/wide", false],
        ["/api/v1/table/people/records?limit=1000", false],
        ["/api/v1/table/people/records/csv", true],
        ["/api/v1/table/people/records/ndjson", true],
        ["/docs/assets/swagger-ui.css", false],
        ["/docs/assets/swagger-ui-bundle.js", true],
      ] as const
    ) {
      await t.step(`${path}: gzip and deflate, and identity when asked`, async () => {
        const plain = await rawRequest(server, "GET", path, {
          ...auth,
          "accept-encoding": "identity",
        });
        assert.equal(plain.status, 200);
        assert.equal(plain.headers["content-encoding"], undefined);
        assert.match(String(plain.headers["vary"]), /accept-encoding/i);
        for (const format of ["gzip", "deflate"] as const) {
          const packed = await rawRequest(server, "GET", path, {
            ...auth,
            "accept-encoding": format,
          });
          assert.equal(packed.status, 200);
          assert.equal(packed.headers["content-encoding"], format);
          assert.match(String(packed.headers["vary"]), /accept-encoding/i);
          assert.equal(
            packed.headers["content-length"],
            streamed ? undefined : String(packed.bytes.length),
          );
          assert.ok(packed.bytes.length < plain.bytes.length, `${packed.bytes.length} bytes`);
          assert.deepEqual(await decompress(packed.bytes, format), plain.bytes);
          // The same tag, weak: the bytes differ, what they stand for does not.
          const tag = plain.headers["etag"];
          if (tag !== undefined) assert.equal(packed.headers["etag"], `W/${tag}`);
        }
      });
    }

    await t.step("a CSV export is sent as it is read, compressed or not", async () => {
      for (const encoding of ["identity", "gzip"]) {
        const answer = await rawRequest(server, "GET", "/api/v1/table/people/records/csv", {
          ...auth,
          "accept-encoding": encoding,
        });
        assert.equal(answer.headers["transfer-encoding"], "chunked", encoding);
        assert.equal(answer.headers["content-length"], undefined, encoding);
      }
    });

    await t.step("an answer under 1 KiB is sent as it is, with its length", async () => {
      for (const path of ["/api/v1/table/people", "/healthz", "/api/v1/table/none"]) {
        const answer = await rawRequest(server, "GET", path, {
          ...auth,
          "accept-encoding": "gzip",
        });
        assert.equal(answer.headers["content-encoding"], undefined, path);
        assert.equal(Number(answer.headers["content-length"]), answer.bytes.length, path);
        assert.ok(answer.bytes.length > 0 && answer.bytes.length < 1024, path);
      }
    });

    await t.step("an image is sent as it is, with its length", async () => {
      const png = await rawRequest(server, "GET", "/docs/assets/favicon.png", {
        "accept-encoding": "gzip",
      });
      assert.equal(png.headers["content-encoding"], undefined);
      assert.equal(Number(png.headers["content-length"]), png.bytes.length);
    });

    await t.step("HEAD is answered uncompressed, with the GET's headers", async () => {
      const head = await rawRequest(server, "HEAD", "/api/v1/openapi.json", {
        "accept-encoding": "gzip",
      });
      assert.equal(head.status, 200);
      assert.equal(head.headers["content-encoding"], undefined);
      assert.equal(head.bytes.length, 0);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("HTTP: If-None-Match with the current ETag is 304 on a table and on the OpenAPI document", async (t) => {
  const server = await TestServer.start({});
  try {
    ok(
      await server.request("POST", "table/cities", {
        body: {
          table: { columns: [{ name: "id", type: "BIGINT" }, { name: "name", type: "VARCHAR" }] },
        },
      }),
    );

    await t.step("a table: 304 while unchanged, 200 with a new tag after a change", async () => {
      const first = await server.request("GET", "table/cities");
      const tag = first.headers.get("etag");
      assert.match(tag ?? "", /^(W\/)?"[^"]+"$/);

      const again = await server.request("GET", "table/cities", {
        headers: { "if-none-match": tag! },
      });
      assert.equal(again.status, 304);
      assert.equal(again.text, "");
      assert.equal(again.headers.get("etag"), tag);
      const listed = await server.request("GET", "table/cities", {
        headers: { "if-none-match": `"other", ${tag}` },
      });
      assert.equal(listed.status, 304);

      const wanted = structuredClone(first.body.table);
      wanted.columns.push({ name: "country", type: "VARCHAR" });
      ok(await server.request("PUT", "table/cities", { body: { table: wanted } }));
      const changed = await server.request("GET", "table/cities", {
        headers: { "if-none-match": tag! },
      });
      assert.equal(changed.status, 200);
      assert.notEqual(changed.headers.get("etag"), tag);
      assert.equal(changed.body.table.columns.length, 3);
    });

    await t.step("a row change keeps the definition's tag: the answer is the same", async () => {
      const tag = (await server.request("GET", "table/cities")).headers.get("etag")!;
      ok(await server.request("POST", "table/cities/records", { body: [{ id: 1, name: "Oslo" }] }));
      const after = await server.request("GET", "table/cities", {
        headers: { "if-none-match": tag },
      });
      assert.equal(after.status, 304);
    });

    await t.step(
      "the weak tag of a compressed answer works for If-None-Match and If-Match",
      async () => {
        ok(await server.request("POST", "table/regions", { body: wide(30) }));
        const packed = await rawRequest(server, "GET", "/api/v1/table/regions", {
          authorization: `Bearer ${server.token}`,
          "accept-encoding": "gzip",
        });
        const weak = String(packed.headers["etag"]);
        assert.match(weak, /^W\/"/);
        const again = await server.request("GET", "table/regions", {
          headers: { "if-none-match": weak },
        });
        assert.equal(again.status, 304);

        const current = ok(await server.request("GET", "table/regions")).table;
        const renamed = { ...current, name: "areas" };
        ok(
          await server.request("PUT", "table/regions", {
            body: { table: renamed },
            headers: { "if-match": weak },
          }),
        );
        const stale = await server.request("PUT", "table/areas", {
          body: { table: { ...renamed, name: "regions" } },
          headers: { "if-match": weak },
        });
        assert.equal(stale.status, 409, "the old tag no longer names the table");
      },
    );

    await t.step("the OpenAPI document", async () => {
      const first = await server.request("GET", "openapi.json", { token: null });
      const tag = first.headers.get("etag");
      assert.match(tag ?? "", /^(W\/)?"[^"]+"$/);
      const again = await server.request("GET", "openapi.json", {
        token: null,
        headers: { "if-none-match": tag! },
      });
      assert.equal(again.status, 304);
      assert.equal(again.text, "");
      const other = await server.request("GET", "openapi.json", {
        token: null,
        headers: { "if-none-match": '"something-else"' },
      });
      assert.equal(other.status, 200);
      assert.deepEqual(other.body, first.body);
    });

    await t.step("a 304 is only for GET: a PUT with If-None-Match is judged as a PUT", async () => {
      const answer = await server.request("GET", "table/areas");
      const tag = answer.headers.get("etag")!;
      const put = await server.request("PUT", "table/areas", {
        body: { table: answer.body.table },
        headers: { "if-none-match": tag },
      });
      assert.equal(put.status, 200);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("HTTP: CORS_ORIGINS lets the listed origins call the API from a browser", async (t) => {
  const allowed = "https://app.example";
  const server = await TestServer.start({ CORS_ORIGINS: `${allowed}, http://localhost:5173` });
  const plain = await TestServer.start({});
  const preflight = (origin: string) => ({
    token: null,
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, idempotency-key",
    },
  });
  try {
    await t.step("a preflight from a listed origin is 204 without a token", async () => {
      const answer = await server.request("OPTIONS", "table/people/records", preflight(allowed));
      assert.equal(answer.status, 204);
      assert.equal(answer.headers.get("access-control-allow-origin"), allowed);
      assert.match(answer.headers.get("access-control-allow-methods") ?? "", /\bPOST\b/);
      const headers = (answer.headers.get("access-control-allow-headers") ?? "").toLowerCase();
      assert.match(headers, /\bauthorization\b/);
      assert.match(headers, /\bcontent-type\b/);
      assert.match(headers, /\bidempotency-key\b/);
      assert.match(answer.headers.get("vary") ?? "", /\borigin\b/i);
      assert.equal(answer.headers.get("access-control-allow-credentials"), null);
    });

    await t.step("a preflight from another origin gets no CORS header", async () => {
      const answer = await server.request(
        "OPTIONS",
        "table/people/records",
        preflight("https://elsewhere.example"),
      );
      assert.notEqual(answer.status, 204);
      assert.deepEqual(corsHeaders(answer.headers), []);
      assert.match(answer.headers.get("vary") ?? "", /\borigin\b/i);
    });

    await t.step("answers to a listed origin carry the origin and expose the ETag", async () => {
      ok(await server.request("POST", "table/people", { body: {} }));
      const answer = await server.request("GET", "table/people", {
        headers: { origin: allowed },
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get("access-control-allow-origin"), allowed);
      const exposed = (answer.headers.get("access-control-expose-headers") ?? "").toLowerCase();
      assert.match(exposed, /\betag\b/);
      assert.match(exposed, /\bx-request-id\b/);
      for (const name of ["idempotent-replayed", "retry-after", "www-authenticate", "allow"]) {
        assert.match(exposed, new RegExp(`\\b${name}\\b`));
      }
      // An error is readable by the page too.
      const refused = await server.request("GET", "table/people", {
        token: null,
        headers: { origin: allowed },
      });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers.get("access-control-allow-origin"), allowed);
      const other = await server.request("GET", "table/people", {
        headers: { origin: "https://elsewhere.example" },
      });
      assert.equal(other.status, 200);
      assert.deepEqual(corsHeaders(other.headers), []);
    });

    await t.step("an OPTIONS that is no preflight is an ordinary request", async () => {
      const answer = await server.request("OPTIONS", "table/people", {
        token: null,
        headers: { origin: allowed },
      });
      assert.equal(answer.status, 401);
    });

    await t.step("without CORS_ORIGINS no answer has a CORS header", async () => {
      const answer = await plain.request("OPTIONS", "table/people/records", preflight(allowed));
      assert.notEqual(answer.status, 204);
      assert.deepEqual(corsHeaders(answer.headers), []);
      const got = await plain.request("GET", "openapi.json", {
        token: null,
        headers: { origin: allowed },
      });
      assert.deepEqual(corsHeaders(got.headers), []);
    });
  } finally {
    await server.dispose();
    await plain.dispose();
  }
});

Deno.test("HTTP: CORS_ORIGINS=* lets any origin call the API", async () => {
  const server = await TestServer.start({ CORS_ORIGINS: "*" });
  try {
    const answer = await server.request("OPTIONS", "table", {
      token: null,
      headers: { origin: "https://anywhere.example", "access-control-request-method": "GET" },
    });
    assert.equal(answer.status, 204);
    assert.equal(answer.headers.get("access-control-allow-origin"), "*");
  } finally {
    await server.dispose();
  }
});

Deno.test("HTTP: HEAD declares the GET's length", async () => {
  const server = await TestServer.start({});
  try {
    ok(await server.request("POST", "table/t", { body: wide(3) }));
    const auth = { authorization: `Bearer ${server.token}` };
    for (const path of ["/api/v1/table/t", "/api/v1/openapi.json"]) {
      for (const encoding of ["identity", "gzip"]) {
        const headers = { ...auth, "accept-encoding": encoding };
        const get = await rawRequest(server, "GET", path, {
          ...headers,
          "accept-encoding": "identity",
        });
        const head = await rawRequest(server, "HEAD", path, headers);
        assert.equal(head.status, 200);
        assert.equal(
          head.headers["content-length"],
          String(get.bytes.length),
          `${path} ${encoding}`,
        );
      }
    }
  } finally {
    await server.dispose();
  }
});

Deno.test("HTTP: a request no route takes is 404 or 405 whatever its body", async (t) => {
  const server = await TestServer.start({ MAX_JSON_BYTES: "1KiB", BODY_IDLE_SECONDS: "1" });
  try {
    const big = JSON.stringify({ filler: "x".repeat(4096) });
    const json = { "content-type": "application/json" };
    await t.step("a body over the JSON limit", async () => {
      const nowhere = await server.request("POST", "nothing", { body: big, headers: json });
      assert.equal(nowhere.status, 404, nowhere.text);
      const wrongMethod = await server.request("PATCH", "table/t", { body: big, headers: json });
      assert.equal(wrongMethod.status, 405, wrongMethod.text);
      // A route that takes it still refuses it.
      const taken = await server.request("POST", "table/t", { body: big, headers: json });
      assert.equal(taken.status, 413, taken.text);
    });

    await t.step("a body that stops arriving", async () => {
      const socket = await server.rawPost(
        "/api/v1/nothing",
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
      );
      try {
        const buffer = new Uint8Array(4096);
        const read = await socket.read(buffer);
        const head = new TextDecoder().decode(buffer.subarray(0, read ?? 0));
        assert.match(head, /^HTTP\/1\.1 404 /);
      } finally {
        socket.close();
      }
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("HTTP: a 304 carries the headers its 200 would: CORS, ETag and Vary", async () => {
  const origin = "https://app.example";
  const server = await TestServer.start({ CORS_ORIGINS: origin });
  try {
    ok(await server.request("POST", "table/wide", { body: wide(40) }));
    ok(await server.request("POST", "table/narrow", { body: wide(2) }));
    const kept = ["etag", "vary", "access-control-allow-origin", "access-control-expose-headers"];
    for (const path of ["/api/v1/table/wide", "/api/v1/table/narrow", "/api/v1/openapi.json"]) {
      for (const encoding of ["gzip", "identity"]) {
        const headers = {
          authorization: `Bearer ${server.token}`,
          origin,
          "accept-encoding": encoding,
        };
        const full = await rawRequest(server, "GET", path, headers);
        assert.equal(full.status, 200);
        const tag = String(full.headers["etag"]);
        const cached = await rawRequest(server, "GET", path, { ...headers, "if-none-match": tag });
        assert.equal(cached.status, 304, `${path} ${encoding}`);
        for (const name of kept) {
          assert.equal(cached.headers[name], full.headers[name], `${name} of ${path} ${encoding}`);
        }
        assert.equal(cached.headers["access-control-allow-origin"], origin);
      }
    }
  } finally {
    await server.dispose();
  }
});
