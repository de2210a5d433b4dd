import assert from "node:assert/strict";
import {
  base64url,
  exportJWK,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importPKCS8,
  SignJWT,
} from "jose";
import { errorOf, mint, ok, TestServer } from "./helpers/server.ts";

function unsignedToken(payload: Record<string, unknown>): string {
  const encode = (value: unknown) =>
    base64url.encode(new TextEncoder().encode(JSON.stringify(value)));
  return `${encode({ alg: "none", typ: "JWT" })}.${encode(payload)}.`;
}

function assertInvalidToken(answer: Awaited<ReturnType<TestServer["request"]>>, why: string): void {
  errorOf(answer, 401);
  assert.match(answer.headers.get("www-authenticate") ?? "", /^Bearer error="invalid_token"/, why);
}

Deno.test("auth: HMAC tokens, scopes and the schemas claim", async (t) => {
  const server = await TestServer.start();
  const now = Math.floor(Date.now() / 1000);
  try {
    await t.step("a missing, malformed or invalid token is 401 with WWW-Authenticate", async () => {
      const cases: [string, Record<string, string> | null][] = [
        ["no header", null],
        ["wrong scheme", { authorization: "Basic dXNlcjpwYXNz" }],
        ["bearer without token", { authorization: "Bearer" }],
        ["garbage", { authorization: "Bearer garbage" }],
        ["three garbage parts", { authorization: "Bearer a.b.c" }],
      ];
      for (const [why, headers] of cases) {
        assertInvalidToken(
          await server.request("GET", "table", { token: null, headers: headers ?? {} }),
          why,
        );
      }
    });

    await t.step(
      "bad signature, expiry, not-before, future iat, missing exp and alg none are 401",
      async () => {
        const tokens: [string, string][] = [
          [
            "bad signature",
            await mint({ scope: "tables:read", secret: "another-secret-another-secret-another" }),
          ],
          ["expired", await mint({ scope: "tables:read", expiresIn: -120 })],
          ["not yet valid", await mint({ scope: "tables:read", notBefore: 120 })],
          ["issued in the future", await mint({ scope: "tables:read", issuedAt: now + 600 })],
          ["no exp", await mint({ scope: "tables:read", expiresIn: null })],
          ["alg none", unsignedToken({ scope: "tables:read", exp: now + 600, sub: "x" })],
          [
            "HS512 with a wrong key",
            await mint({ scope: "tables:read", alg: "HS512", secret: "x".repeat(64) }),
          ],
        ];
        for (const [why, token] of tokens) {
          assertInvalidToken(await server.request("GET", "table", { token }), why);
        }
      },
    );

    await t.step("expiry and not-before are honoured with 30 s of skew", async () => {
      ok(
        await server.request("GET", "table", {
          token: await mint({ scope: "tables:read", expiresIn: -10 }),
        }),
      );
      ok(
        await server.request("GET", "table", {
          token: await mint({ scope: "tables:read", notBefore: 10 }),
        }),
      );
      ok(
        await server.request("GET", "table", {
          token: await mint({ scope: "tables:read", alg: "HS384" }),
        }),
      );
    });

    await t.step("a read scope reads but cannot write (403); write implies read", async () => {
      const reader = await mint({ scope: "tables:read" });
      ok(await server.request("GET", "table", { token: reader }));
      ok(await server.request("GET", "schema", { token: reader }));
      errorOf(await server.request("POST", "table/t1", { token: reader, body: {} }), 403);
      errorOf(await server.request("POST", "schema/s1", { token: reader }), 403);
      const writer = await mint({ scopes: ["tables:write"] });
      ok(await server.request("POST", "table/t1", { token: writer, body: {} }));
      ok(await server.request("GET", "table/t1", { token: writer }));
      const templatesOnly = await mint({ scope: "templates:read templates:write" });
      errorOf(await server.request("GET", "table", { token: templatesOnly }), 403);
      errorOf(await server.request("DELETE", "table/t1", { token: templatesOnly }), 403);
    });

    await t.step("the schemas claim confines a token: 403 outside, listings filtered", async () => {
      ok(await server.request("POST", "schema/sales"));
      ok(await server.request("POST", "schema/hr"));
      ok(await server.request("POST", "table/pay?schema=hr", { body: {} }));
      ok(await server.request("POST", "table/deals?schema=sales", { body: {} }));
      const sales = await mint({ scope: "tables:write", schemas: ["Sales"] });
      ok(await server.request("GET", "table/deals?schema=sales", { token: sales }));
      errorOf(await server.request("GET", "table/pay?schema=hr", { token: sales }), 403);
      errorOf(await server.request("GET", "table/t1", { token: sales }), 403);
      errorOf(await server.request("POST", "table/x?schema=hr", { token: sales, body: {} }), 403);
      errorOf(await server.request("DELETE", "table/pay?schema=hr", { token: sales }), 403);
      errorOf(await server.request("DELETE", "schema/hr", { token: sales }), 403);
      errorOf(await server.request("POST", "schema/other", { token: sales }), 403);
      errorOf(await server.request("GET", "table?schema=hr", { token: sales }), 403);
      const listing = ok(await server.request("GET", "table", { token: sales }));
      assert.deepEqual(listing, {
        tables: [{ name: "deals", schema: "sales", rows_estimate: 0 }],
        total: 1,
      });
      const schemas = ok(await server.request("GET", "schema", { token: sales }));
      assert.deepEqual(schemas, { schemas: [{ name: "sales" }] });
      ok(await server.request("GET", "table/pay?schema=hr"));
    });

    await t.step(
      "a schemas claim that is not a list of names is 401: it fails closed",
      async () => {
        const claims: [string, unknown][] = [
          ["null", null],
          ["a string", "sales"],
          ["an object", { sales: true }],
          ["a number in the list", [1]],
          ["an empty name", [""]],
          ["a null in the list", ["sales", null]],
          ["a name that is no schema name", ["sales; drop"]],
        ];
        for (const [why, schemas] of claims) {
          const answer = await server.request("GET", "table", {
            token: await mint({ scope: "tables:read", schemas }),
          });
          assertInvalidToken(answer, `schemas as ${why}`);
          assert.match(answer.body.error.message, /Token claim "schemas"/, why);
        }
        // An empty list confines the token to no schema: valid, but it reaches nothing.
        const none = await mint({ scope: "tables:read", schemas: [] });
        assert.deepEqual(ok(await server.request("GET", "schema", { token: none })), {
          schemas: [],
        });
      },
    );
  } finally {
    await server.dispose();
  }
});

Deno.test("auth: issuer and audience are checked when configured", async () => {
  const server = await TestServer.start({
    AUTH_ISSUER: "https://issuer.example",
    AUTH_AUDIENCE: "tables",
  });
  try {
    const good = await mint({
      scope: "tables:read",
      issuer: "https://issuer.example",
      audience: "tables",
    });
    ok(await server.request("GET", "table", { token: good }));
    const tokens: [string, string][] = [
      [
        "wrong issuer",
        await mint({ scope: "tables:read", issuer: "https://evil.example", audience: "tables" }),
      ],
      [
        "wrong audience",
        await mint({ scope: "tables:read", issuer: "https://issuer.example", audience: "other" }),
      ],
      ["no issuer", await mint({ scope: "tables:read", audience: "tables" })],
      ["no audience", await mint({ scope: "tables:read", issuer: "https://issuer.example" })],
    ];
    for (const [why, token] of tokens) {
      assertInvalidToken(await server.request("GET", "table", { token }), why);
    }
  } finally {
    await server.dispose();
  }
});

Deno.test("auth: a PEM public key pins asymmetric algorithms", async (t) => {
  const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
  const pem = await exportSPKI(publicKey);
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/key.pem`, pem);
  const now = Math.floor(Date.now() / 1000);
  const pkcs8 = await exportPKCS8(privateKey);
  const rsa = async (alg: string) => await importPKCS8(pkcs8, alg);
  const sign = (alg: string, key: Parameters<SignJWT["sign"]>[0]) =>
    new SignJWT({ scope: "tables:read" }).setProtectedHeader({ alg }).setSubject("rsa")
      .setExpirationTime(now + 600)
      .sign(key);
  const sources: [string, string][] = [["PEM text", pem], ["PEM path", `${dir}/key.pem`]];
  for (const [label, value] of sources) {
    await t.step(`configured as ${label}`, async () => {
      const server = await TestServer.start({ AUTH_JWT_SECRET: "", AUTH_JWT_PUBLIC_KEY: value });
      try {
        ok(await server.request("GET", "table", { token: await sign("RS256", privateKey) }));
        ok(
          await server.request("GET", "table", { token: await sign("RS512", await rsa("RS512")) }),
        );
        ok(
          await server.request("GET", "table", { token: await sign("PS256", await rsa("PS256")) }),
        );
        const other = await generateKeyPair("RS256");
        assertInvalidToken(
          await server.request("GET", "table", { token: await sign("RS256", other.privateKey) }),
          "other RSA key",
        );
        assertInvalidToken(
          await server.request("GET", "table", {
            token: await sign("HS256", new TextEncoder().encode(pem)),
          }),
          "HS256 signed with the public key text",
        );
        assertInvalidToken(
          await server.request("GET", "table", {
            token: unsignedToken({ scope: "tables:read", exp: now + 600 }),
          }),
          "alg none",
        );
        assertInvalidToken(
          await server.request("GET", "table", { token: await mint({ scope: "tables:read" }) }),
          "HMAC",
        );
      } finally {
        await server.dispose();
      }
    });
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("auth: a JWKS file selects keys by kid", async () => {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", use: "sig" };
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify({ keys: [jwk] }));
  const server = await TestServer.start({
    AUTH_JWT_SECRET: "",
    AUTH_JWKS_FILE: `${dir}/jwks.json`,
  });
  const now = Math.floor(Date.now() / 1000);
  try {
    const token = await new SignJWT({ scope: "tables:read" }).setProtectedHeader({
      alg: "ES256",
      kid: "k1",
    })
      .setExpirationTime(now + 600).sign(privateKey);
    ok(await server.request("GET", "table", { token }));
    const other = await generateKeyPair("ES256");
    const forged = await new SignJWT({ scope: "tables:read" }).setProtectedHeader({
      alg: "ES256",
      kid: "k1",
    })
      .setExpirationTime(now + 600).sign(other.privateKey);
    assertInvalidToken(
      await server.request("GET", "table", { token: forged }),
      "forged with another key",
    );
    assertInvalidToken(
      await server.request("GET", "table", { token: await mint({ scope: "tables:read" }) }),
      "HS256",
    );
  } finally {
    await server.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("auth: first start without a key creates a 0600 secret and prints a working token", async () => {
  const server = await TestServer.start({ AUTH_JWT_SECRET: "" });
  try {
    const token = server.printedToken();
    assert.ok(token, `no token printed:\n${server.stdout}`);
    const info = await Deno.stat(`${server.dataDir}/jwt-secret`);
    assert.equal(info.mode! & 0o777, 0o600);
    ok(await server.request("POST", "table/first", { token, body: {} }));
    await server.restart();
    assert.equal(server.printedToken(), undefined, "a restart must not print another token");
    ok(await server.request("GET", "table/first", { token }));
  } finally {
    await server.dispose();
  }
});
