/**
 * The length of an answer given whole, declared before it leaves.
 *
 * @module
 */

import type { MiddlewareHandler } from "hono";
import type { Env } from "./observe.ts";

/** Statuses whose answers have no body to measure. */
const BODILESS = new Set([101, 204, 205, 304]);

/**
 * Middleware that sets `Content-Length` on every answer given whole (JSON, text, a file's
 * bytes): the compression in front of it weighs an answer by that header, so a small answer
 * goes out as it is, with its length, rather than compressed and chunked. A HEAD is measured
 * too (Hono runs the GET handler for it and drops the body later): its length is the GET's,
 * where Deno would declare 0 for the empty body it sends. A streamed answer (an export or a
 * query's file, marked by `streamedResponse()` of observe.ts) is left alone: it is sent as it
 * is read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import { declareLength } from "./body_length.ts";
 *
 * const app = new Hono();
 * app.use("*", declareLength());
 * app.get("/", (c) => c.json({ greeting: "héllo" }));
 * const answer = await app.request("/");
 * assert.equal(answer.headers.get("content-length"), "21");
 * ```
 */
export function declareLength(): MiddlewareHandler<Env> {
  return async function declareLength(c, next) {
    await next();
    if (
      BODILESS.has(c.res.status) || c.get("streamedResponse") ||
      c.res.headers.has("content-length")
    ) return;
    // Read once and answered from those bytes: a clone would tee the body and hold it twice.
    const { status, statusText, headers } = c.res;
    const bytes = await c.res.arrayBuffer();
    headers.set("content-length", String(bytes.byteLength));
    c.res = new Response(bytes, { status, statusText, headers });
  };
}
