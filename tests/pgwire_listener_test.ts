/**
 * The PostgreSQL protocol listener as a process sees it: TLS with a certificate the test
 * makes, the refusal to listen off loopback without one, and its place in the start and stop
 * of the service.
 */

import assert from "node:assert/strict";
import { runToExit, TestServer } from "./helpers/server.ts";
import { pgClient, pgwirePort } from "./helpers/pgwire.ts";

/** A self-signed certificate and its key, made by openssl in `dir`; undefined without openssl. */
async function certificate(dir: string): Promise<{ cert: string; key: string } | undefined> {
  const cert = `${dir}/cert.pem`;
  const key = `${dir}/key.pem`;
  try {
    const made = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-keyout",
        key,
        "-out",
        cert,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound && !Deno.env.get("REQUIRE_PGWIRE_CLIENTS")) {
      return undefined;
    }
    throw error;
  }
  return { cert, key };
}

Deno.test("the PostgreSQL protocol speaks TLS with PGWIRE_TLS_CERT and PGWIRE_TLS_KEY", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const pem = await certificate(dir);
    if (!pem) {
      await t.step({ name: "openssl is not installed", ignore: true, fn: () => {} });
      return;
    }
    const server = await TestServer.start({ PGWIRE_TLS_CERT: pem.cert, PGWIRE_TLS_KEY: pem.key });
    try {
      assert.match(server.stdout, /PostgreSQL protocol on [^\s]+:\d+ \(TLS\)/);
      const client = await pgClient(server, server.token, { ssl: { rejectUnauthorized: false } });
      try {
        const stream = (client as unknown as { connection: { stream: { encrypted?: boolean } } })
          .connection.stream;
        assert.equal(stream.encrypted, true);
        assert.deepEqual((await client.query("SELECT 40 + 2 AS answer")).rows, [{ answer: 42 }]);
      } finally {
        await client.end();
      }
      // A client that does not ask for TLS is still served on loopback.
      const plain = await pgClient(server, server.token, { ssl: false });
      await plain.end();
    } finally {
      await server.dispose();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the service refuses to start the PostgreSQL protocol off loopback without TLS, naming the variables", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const result = await runToExit({
      HOST: "0.0.0.0",
      PORT: "0",
      PGWIRE_PORT: "0",
      DATA_DIR: dir,
      AUTH_JWT_SECRET: "s".repeat(40),
    });
    assert.equal(result.code, 1, result.stdout);
    assert.match(result.stderr, /PGWIRE_TLS_CERT and PGWIRE_TLS_KEY/);
    assert.doesNotMatch(result.stdout, /Listening/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stopping the service ends its PostgreSQL clients with 57P01, and PGWIRE_PORT=off listens for none", async () => {
  const server = await TestServer.start();
  const client = await pgClient(server);
  const ended = new Promise<string>((resolve) =>
    client.on("error", (e) => resolve(String((e as { code?: string }).code)))
  );
  await client.query("BEGIN");
  await client.query("SELECT 1");
  await server.stop();
  assert.equal(await ended, "57P01");
  await server.dispose();
  const off = await TestServer.start({ PGWIRE_PORT: "off" });
  try {
    assert.throws(() => pgwirePort(off));
  } finally {
    await off.dispose();
  }
});

Deno.test("a PostgreSQL client that sends nothing for PGWIRE_IDLE_TIMEOUT_SECONDS is closed with 57P05", async () => {
  const server = await TestServer.start({ PGWIRE_IDLE_TIMEOUT_SECONDS: "1" });
  try {
    const client = await pgClient(server);
    const ended = new Promise<string>((resolve) =>
      client.on("error", (e) => resolve(String((e as { code?: string }).code)))
    );
    assert.deepEqual((await client.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
    assert.equal(await ended, "57P05");
    await client.end().catch(() => {});
  } finally {
    await server.dispose();
  }
});
