/**
 * Cross-origin access (CORS) for the pages of the origins `CORS_ORIGINS` lists.
 *
 * @module
 */

import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";

/** The CORS headers of an answer (not a preflight's): a 304 keeps them as its 200 had them. */
export const CORS_ANSWER_HEADERS = [
  "access-control-allow-origin",
  "access-control-expose-headers",
] as const;

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/**
 * Middleware that lets pages of `origins` (or of any origin, for `["*"]`) call the service
 * with a bearer token: a preflight from one of them is answered 204 before any token check,
 * and every answer to one of them names it in `Access-Control-Allow-Origin` and exposes the
 * headers a client reads. A request from any other origin is served as if CORS did not
 * exist, so a browser keeps its answer from the page. No credentials: tokens travel in
 * `Authorization`, never in cookies.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import { corsFor } from "./cors.ts";
 *
 * const app = new Hono();
 * app.use("*", corsFor(["https://app.example"]));
 * app.get("/", (c) => c.text("hello"));
 * const preflight = await app.request("/", {
 *   method: "OPTIONS",
 *   headers: { origin: "https://app.example", "access-control-request-method": "GET" },
 * });
 * assert.equal(preflight.status, 204);
 * assert.equal(preflight.headers.get("access-control-allow-origin"), "https://app.example");
 * const other = await app.request("/", { headers: { origin: "https://elsewhere.example" } });
 * assert.equal(other.headers.get("access-control-allow-origin"), null);
 * ```
 */
export function corsFor(origins: readonly string[]): MiddlewareHandler {
  const any = origins.includes("*");
  const allowed = cors({
    origin: any ? "*" : [...origins],
    allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    allowHeaders: [
      "Authorization",
      "Content-Type",
      "Idempotency-Key",
      "If-Match",
      "If-None-Match",
      "X-Request-Id",
    ],
    // Every header the service answers with that a client acts on, beyond the safelisted ones.
    exposeHeaders: [
      "Allow",
      "Content-Disposition",
      "ETag",
      "Idempotent-Replayed",
      "Retry-After",
      "WWW-Authenticate",
      "X-Request-Id",
    ],
    maxAge: PREFLIGHT_MAX_AGE,
  });
  return async function corsFor(c, next) {
    const origin = c.req.header("origin");
    const isPreflight = c.req.method === "OPTIONS" &&
      c.req.header("access-control-request-method") !== undefined;
    // hono/cors answers any OPTIONS as a preflight, and names its headers whatever the
    // origin; only a listed origin's requests reach it, and an OPTIONS that asks nothing
    // of CORS is routed like any request.
    if (
      origin !== undefined && (any || origins.includes(origin)) &&
      (isPreflight || c.req.method !== "OPTIONS")
    ) return await allowed(c, next);
    await next();
    // The answer depends on the origin: a cache must not give it to a listed one.
    if (!any) c.header("Vary", "Origin", { append: true });
  };
}
