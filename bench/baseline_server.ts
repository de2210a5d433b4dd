/**
 * The load benchmark's baseline: a minimal Hono app on `Deno.serve` that only verifies the
 * bearer JWT (HS256 with jose, the secret from `AUTH_JWT_SECRET`), reads the body and answers
 * a small JSON. It runs as a child process on port 0 and prints
 * `Listening on http://127.0.0.1:<port>/`, like the service, so both are driven and measured
 * the same way.
 *
 * @module
 */

import { Hono } from "hono";
import { jwtVerify } from "jose";

/** The baseline app: every route verifies an HS256 token signed with `secret`, nothing else. */
function createBaseline(secret: string): Hono {
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
  const app = createBaseline(secret);
  Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => console.log(`Listening on http://127.0.0.1:${port}/`),
  }, app.fetch);
}
