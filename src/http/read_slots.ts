/**
 * A cap on the queries one token has under way at once (`QUERY_CONCURRENCY_PER_TOKEN`). Each
 * holds an engine connection and its cores for as long as it runs, up to
 * `QUERY_TIMEOUT_SECONDS` (a streamed answer until it ends), so without a cap a few slow
 * queries from one token could hold every connection while other clients wait. Record reads
 * are not capped: their grammar has no slow forms, and a grid asks for several pages at once.
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "../errors.ts";
import type { Env } from "./observe.ts";

/**
 * Middleware letting each bearer token have at most `limit` of the requests it guards under
 * way; one more is 429 with `Retry-After`. A request holds its slot until its answer is
 * complete: a streamed answer until its body ends or its client goes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import { readSlots } from "./read_slots.ts";
 *
 * const open: ReadableStreamDefaultController[] = [];
 * const app = new Hono()
 *   .use(readSlots(1))
 *   .get("/", () => new Response(new ReadableStream({ start: (c) => void open.push(c) })))
 *   .onError((e) => (e as unknown as { toResponse(): Response }).toResponse());
 * const auth = { headers: { authorization: "Bearer a" } };
 * const first = await app.request("/", auth);
 * assert.equal((await app.request("/", auth)).status, 429);
 * // The same token however the scheme is spelled.
 * assert.equal((await app.request("/", { headers: { authorization: "bearer  a" } })).status, 429);
 * const other = await app.request("/", { headers: { authorization: "Bearer b" } });
 * assert.equal(other.status, 200);
 * for (const controller of open) controller.close();
 * await first.text();
 * await other.text();
 * assert.equal((await app.request("/", auth)).status, 200);
 * ```
 */
export function readSlots(limit: number): MiddlewareHandler<Env> {
  const held = new Map<string, number>();
  const release = (token: string) => {
    const left = (held.get(token) ?? 1) - 1;
    if (left === 0) held.delete(token);
    else held.set(token, left);
  };
  return async function readSlots(c: Context<Env>, next) {
    // The token itself, however the header spells the scheme and spaces (as auth.ts reads it).
    const header = (c.req.header("authorization") ?? "").trim();
    const token = /^Bearer +(\S+)$/i.exec(header)?.[1] ?? header;
    const taken = held.get(token) ?? 0;
    if (taken >= limit) throw ApiError.tooManyReads(limit);
    held.set(token, taken + 1);
    let released = false;
    const once = () => {
      if (!released) {
        released = true;
        release(token);
      }
    };
    try {
      await next();
    } catch (error) {
      once();
      throw error;
    }
    const body = c.res.body;
    if (!body) return once();
    c.res = new Response(releasing(body, once), c.res);
  };
}

/** `stream` as it is, calling `done` once it ends, fails or its reader cancels it. */
function releasing(
  stream: ReadableStream<Uint8Array>,
  done: () => void,
): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  return new ReadableStream({
    async pull(controller) {
      try {
        const read = await reader.read();
        if (read.done) {
          done();
          controller.close();
        } else controller.enqueue(read.value);
      } catch (error) {
        done();
        controller.error(error);
      }
    },
    async cancel(reason) {
      done();
      await reader.cancel(reason);
    },
  });
}
