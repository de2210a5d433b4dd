/**
 * The benchmarks' baseline: a minimal Hono app on `Deno.serve` that only verifies the bearer
 * JWT (HS256 with jose, the secret from `AUTH_JWT_SECRET`), reads the body and answers a
 * small JSON. With `DATABASE_URL` set, `POST /api/v1/table/<name>/records` also inserts the
 * body into PostgreSQL table `<name>` with `INSERT … SELECT FROM json_populate_recordset`
 * through a `pg` pool (what PostgREST runs). It runs as a child process on port 0 and prints
 * `Listening on http://127.0.0.1:<port>/`, like the service, so both are driven and measured
 * the same way.
 *
 * @module
 */

import { Hono } from "hono";
import { jwtVerify } from "jose";
import type pg from "pg";

/** The baseline app: every route verifies an HS256 token signed with `secret`, nothing else. */
function createBaseline(secret: string, pool?: pg.Pool): Hono {
  const key = new TextEncoder().encode(secret);
  const app = new Hono();
  app.use(async function verifyBearer(c, next) {
    const match = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "");
    try {
      if (!match) throw new Error("Missing bearer token");
      await jwtVerify(match[1]!, key, { algorithms: ["HS256"], requiredClaims: ["exp"] });
    } catch {
      return c.json({ error: { code: 401, type: "unauthorized", message: "Bad token" } }, 401);
    }
    await next();
  });
  if (pool) {
    app.post("/api/v1/table/:name/records", async function insert(c) {
      const table = `"${c.req.param("name").replaceAll('"', '""')}"`;
      const result = await pool.query(
        `INSERT INTO ${table} SELECT * FROM json_populate_recordset(null::${table}, $1::json)`,
        [await c.req.text()],
      );
      return c.json({ inserted: result.rowCount });
    });
  }
  // The body is read and dropped: answering with it unread stalls Deno's keep-alive
  // connections (seconds per request), which would measure that instead of the server.
  // A body cut off by the generator stopping is no error: nobody waits for that answer.
  app.all("*", async function answer(c) {
    await c.req.arrayBuffer().catch(() => undefined);
    return c.json({ ok: true });
  });
  return app;
}

if (import.meta.main) {
  const secret = Deno.env.get("AUTH_JWT_SECRET");
  if (!secret) {
    throw new Error("Set AUTH_JWT_SECRET to the HS256 secret the tokens are signed with");
  }
  // Asked only with a database: the load benchmark runs this with AUTH_JWT_SECRET alone.
  const url = Deno.permissions.querySync({ name: "env", variable: "DATABASE_URL" }).state ===
      "granted"
    ? Deno.env.get("DATABASE_URL")
    : undefined;
  const pool = url
    ? new (await import("pg")).default.Pool({ connectionString: url, max: 16 })
    : undefined;
  const app = createBaseline(secret, pool);
  Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => console.log(`Listening on http://127.0.0.1:${port}/`),
  }, app.fetch);
}
