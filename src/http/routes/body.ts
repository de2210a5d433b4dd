/**
 * Request bodies of the API's routes: which routes stream theirs, and the read of the others,
 * run once a route has matched.
 *
 * @module
 */

import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context, Env as HonoEnv, MiddlewareHandler } from "hono";
import { readWholeBody } from "../../ingest/spool.ts";

/**
 * Paths whose POST bodies are streamed to disk by the route itself, under its own larger
 * limit (a `PATCH` of records is a small object, read whole like any other body).
 */
const STREAMED_BODY = /\/table\/[^/]+\/(?:records|upload\/[^/]+)\/?$/;

/**
 * Whether a request's body is streamed by its route: a POST of records or an upload.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamedBody } from "./body.ts";
 *
 * assert.equal(streamedBody("POST", "/api/v1/table/t/records"), true);
 * assert.equal(streamedBody("PATCH", "/api/v1/table/t/records"), false);
 * ```
 */
export function streamedBody(method: string, path: string): boolean {
  return method === "POST" && STREAMED_BODY.test(path);
}

/** The streamed routes whose bodies are multipart uploads. */
export const MULTIPART_BODY = /\/upload\/(?:csv|excel)\/?$/;

/** The limits of a body read whole. */
export interface BufferedBodyLimits {
  readonly maxJsonBytes: number;
  readonly bodyIdleMs: number;
}

/** Variables {@link bufferedBody} sets: the read still to run. */
export interface BufferedBodyVariables {
  bufferBody?: () => Promise<void>;
}

/**
 * Middleware that leaves, for a route with a body it does not stream, the read of that body:
 * {@link readBufferedBody} runs it in the route's own middleware (see `scoped()`), so a
 * request no route takes is 404 or 405 whatever its body, and the body is read only once
 * the token may make the request.
 */
export function bufferedBody(
  limits: BufferedBodyLimits,
): MiddlewareHandler<{ Variables: BufferedBodyVariables }> {
  return async function bufferedBody(c, next) {
    if (!streamedBody(c.req.method, c.req.path) && c.req.raw.body) {
      c.set("bufferBody", () => buffer(c, limits));
    }
    await next();
  };
}

/** Reads the body {@link bufferedBody} left for the matched route, if any. */
export async function readBufferedBody(c: Context): Promise<void> {
  const read: (() => Promise<void>) | undefined = c.get("bufferBody");
  if (read) await read();
}

async function buffer(c: Context, limits: BufferedBodyLimits): Promise<void> {
  // Read by the streamed routes' reader (its size limit, idle wait and read failures), for
  // the validator to parse: reading the body itself, it would wait for a stalled body for
  // ever and call one whose read failed malformed JSON.
  const bytes = await readWholeBody(c.req.raw.body, c.req.header("content-length"), {
    maxBytes: limits.maxJsonBytes,
    idleMs: limits.bodyIdleMs,
  });
  // Hono's body cache holds promises, though its type says bare values.
  c.req.bodyCache.arrayBuffer = Promise.resolve(bytes.buffer) as unknown as ArrayBuffer;
}

/**
 * Registers a route whose body is streamed by its handler: the OpenAPI document gets the
 * full route, the router gets it without the body validator (which would read the body).
 */
export function streaming<E extends HonoEnv>(
  app: OpenAPIHono<E>,
  route: RouteConfig,
  handler: (c: Context<E>) => Promise<Response>,
): void {
  // The middleware is the router's, not the document's: openapi() leaves it out, so here too.
  const { middleware: _, ...documented } = route;
  app.openAPIRegistry.registerPath(documented);
  app.openapi(
    { ...route, request: { ...route.request, body: undefined }, hide: true },
    handler as never,
  );
}
