/**
 * Answers given whole: measured, and compressed in one step, before they leave.
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { compress } from "hono/compress";
import { parseAccept } from "hono/utils/accept";
import { COMPRESSIBLE_CONTENT_TYPE_REGEX } from "hono/utils/compress";
import { deflateSync, gzipSync } from "node:zlib";
import type { Env } from "./observe.ts";

/** Statuses whose answers have no body to measure. */
const BODILESS = new Set([101, 204, 205, 304]);

/** The least answer compressed, in bytes: a smaller one gains less than its header costs. */
const THRESHOLD = 1024;

/**
 * The most bytes of an answer given whole compressed in one step: the step holds the event
 * loop (about 10 ms a MiB); a larger answer is compressed as a stream, as a streamed one is.
 */
const MOST_IN_ONE_STEP = 256 * 1024;

/**
 * Middleware that compresses text, JSON and NDJSON of {@link THRESHOLD} bytes or more, as
 * gzip or deflate by the request's `Accept-Encoding`, and makes a compressed answer's `ETag`
 * weak, which conditional requests accept. Hono's `compress()` for streamed answers (an
 * export, a query's file, marked by `streamedResponse()` of observe.ts), which are compressed
 * as they are read; {@link wholeAnswers} before it for the rest.
 */
export function compression(): MiddlewareHandler<Env> {
  return compress({ contentTypeFilter: compressible, threshold: THRESHOLD });
}

/**
 * Middleware that sets `Content-Length` on every answer given whole (JSON, text, a file's
 * bytes), compressing it first as {@link compression} would (a compressed stream costs the
 * server about three times the CPU for a page of 50 records, and is sent in chunks). A HEAD
 * is measured too (Hono runs the GET handler for it and drops the body later): its length is
 * the GET's uncompressed one, where Deno would declare 0 for the empty body it sends. A
 * streamed answer is left alone: it is sent as it is read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import { wholeAnswers } from "./body_length.ts";
 *
 * const app = new Hono();
 * app.use("*", wholeAnswers());
 * app.get("/", (c) => c.json({ greeting: "héllo" }));
 * app.get("/long", (c) => c.json({ greeting: "héllo ".repeat(1000) }));
 * const answer = await app.request("/");
 * assert.equal(answer.headers.get("content-length"), "21");
 * const long = await app.request("/long", { headers: { "accept-encoding": "gzip" } });
 * assert.equal(long.headers.get("content-encoding"), "gzip");
 * assert.equal(long.headers.get("vary"), "Accept-Encoding");
 * const bytes = await long.bytes();
 * assert.equal(long.headers.get("content-length"), String(bytes.length));
 * const text = await new Response(new Blob([bytes]).stream()
 *   .pipeThrough(new DecompressionStream("gzip"))).text();
 * assert.equal(JSON.parse(text).greeting.length, 6000);
 * ```
 */
export function wholeAnswers(): MiddlewareHandler<Env> {
  return async function wholeAnswers(c, next) {
    await next();
    if (
      BODILESS.has(c.res.status) || c.get("streamedResponse") ||
      c.res.headers.has("content-length")
    ) return;
    // Read once and answered from those bytes: a clone would tee the body and hold it twice.
    const { status, statusText, headers } = c.res;
    let bytes: Uint8Array = new Uint8Array(await c.res.arrayBuffer());
    if (bytes.length >= THRESHOLD && bytes.length <= MOST_IN_ONE_STEP && transformable(c)) {
      const vary = headers.get("vary");
      if (vary !== "*" && !/(^|,)\s*accept-encoding\s*(,|$)/i.test(vary ?? "")) {
        headers.set("vary", vary ? `${vary}, Accept-Encoding` : "Accept-Encoding");
      }
      const encoding = encodingFor(c.req.header("accept-encoding"));
      if (encoding) {
        bytes = encoding === "gzip" ? gzipSync(bytes) : deflateSync(bytes);
        headers.set("content-encoding", encoding);
        const etag = headers.get("etag");
        if (etag && !etag.startsWith("W/")) headers.set("etag", `W/${etag}`);
      }
    }
    headers.set("content-length", String(bytes.byteLength));
    c.res = new Response(bytes as Uint8Array<ArrayBuffer>, { status, statusText, headers });
  };
}

/**
 * The encoding `header` weighs most of gzip and deflate, gzip at equal weight (as Hono's
 * `compress()` picks); undefined for neither.
 */
function encodingFor(header: string | undefined): "gzip" | "deflate" | undefined {
  if (header === undefined) return undefined;
  const accepted = parseAccept(header);
  const any = accepted.find((a) => a.type === "*")?.q ?? 0;
  const weight = (name: string) => accepted.find((a) => a.type.toLowerCase() === name)?.q ?? any;
  const [gzip, deflate] = [weight("gzip"), weight("deflate")];
  if (gzip > 0 && gzip >= deflate) return "gzip";
  return deflate > 0 ? "deflate" : undefined;
}

/** Whether {@link compression} may compress `c`'s answer, its encoding aside. */
function transformable(c: Context<Env>): boolean {
  const type = c.res.headers.get("content-type");
  return c.req.method !== "HEAD" && c.res.status !== 206 &&
    !c.res.headers.has("content-encoding") && !c.res.headers.has("transfer-encoding") &&
    type !== null && compressible(type) &&
    !/(^|,)\s*no-transform\s*(,|$)/i.test(c.res.headers.get("cache-control") ?? "");
}

/** The content types compressed: Hono's list, and NDJSON, which it lacks. */
function compressible(type: string): boolean {
  return COMPRESSIBLE_CONTENT_TYPE_REGEX.test(type) ||
    /^\s*application\/x-ndjson\s*(;|$)/i.test(type);
}
