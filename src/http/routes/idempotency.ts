/**
 * Retries without duplicates: a write sent with an `Idempotency-Key` header is carried out
 * once. Its answer is kept in the write's own transaction (see `KeyedWrite`), so a retry
 * with the same key and the same request, even after a crash between the commit and the
 * answer, gets the first answer again and changes nothing.
 *
 * Keys are scoped by the token's subject and schemas claim, the method and the path: tokens
 * of one subject share keys. A request is fingerprinted by SHA-256 over its query, media type,
 * `If-Match` and body, hashed as the body streams by (a multipart body by its parts' names and contents, not its boundary). Only
 * answers to writes that committed are kept: a write that failed changed nothing, and its
 * retry runs again.
 *
 * @module
 */

import { createHash, type Hash } from "node:crypto";
import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { AuthVariables } from "../auth.ts";
import { ApiError } from "../../errors.ts";
import { digestMultipart } from "../../ingest/multipart.ts";
import { type BodyDigest, readBody } from "../../ingest/spool.ts";
import { MULTIPART_BODY, readBufferedBody, streamedBody } from "./body.ts";
import type { KeyedWrite, Store, StoredAnswer } from "../../store/store.ts";
import { IDEMPOTENCY_TTL_MS, KeptAnswers } from "../../service/kept_answers.ts";

/** A key: 1 to 255 visible ASCII characters. */
const KEY = /^[\x21-\x7e]{1,255}$/;

/** The methods that write. */
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * The header's schema, one parameter component of the OpenAPI document (the app registers
 * it) that every write which takes the header refers to.
 */
export const IdempotencyKey = z.string().optional().openapi("IdempotencyKey", {
  param: { name: "idempotency-key", in: "header" },
  description: "1 to 255 visible ASCII characters. A retry with the same key, query, " +
    "content type, `If-Match` and body within 24 hours gets the first answer again (with `Idempotent-Replayed: true`) " +
    "and changes nothing; the same key with another request is 409 " +
    "`idempotency_key_reused`, and while the first is still running 409 " +
    "`idempotency_key_in_use`. Keys are per token subject and schemas claim, method " +
    "and path.",
  example: "2f1c7a0e-upload-42",
});

/** The headers of a write that takes an `Idempotency-Key`. */
export const IdempotencyKeyHeader = z.object({ "idempotency-key": IdempotencyKey });

/** A request's SHA-256, fed as its body streams by. */
export class RequestDigest implements BodyDigest {
  readonly #hash: Hash = createHash("sha256");
  #hex?: string;

  update(bytes: Uint8Array): void {
    if (this.#hex !== undefined) throw new Error("The request's digest is already final");
    this.#hash.update(bytes);
  }

  /** The digest in hex; nothing may be fed after it. */
  hex(): string {
    return this.#hex ??= this.#hash.digest("hex");
  }
}

/** A keyed request on its way to its write. */
export interface KeyedRequest {
  readonly scope: string;
  readonly key: string;
  readonly digest: RequestDigest;
  readonly at: number;
}

/** Variables the middleware sets: the key of a keyed write, and the check still to run. */
export interface IdempotencyVariables {
  idempotency?: KeyedRequest;
  idempotencyCheck?: MiddlewareHandler;
}

/** What the middleware needs: the store, and how to read a body it must fingerprint. */
export interface IdempotencyOptions {
  readonly store: Store;
  readonly maxUploadBytes: number;
  readonly bodyIdleMs: number;
  /** The clock, in milliseconds since the epoch; tests move it. */
  readonly now?: () => number;
}

/**
 * Middleware for the API's writes: checks the `Idempotency-Key` header (400 unless 1–255
 * visible ASCII characters), answers a repeated request from its kept answer, refuses the
 * key for a different request (409 `idempotency_key_reused`) or while a request with it is
 * still running (409 `idempotency_key_in_use`), and otherwise leaves the key for the route
 * to hand to its write through {@link keyedWrite}. Requests without the header, and reads,
 * pass untouched.
 *
 * It runs where {@link afterScope} stands in a route's middleware, after the scope check:
 * a kept answer is given only to a token that may make the request again.
 */
export function idempotency(
  options: IdempotencyOptions,
): MiddlewareHandler<{ Variables: AuthVariables & IdempotencyVariables }> {
  const now = options.now ?? Date.now;
  // One process serves the database file, so this set sees every request that could run.
  const running = new Set<string>();
  const answers = new KeptAnswers(options.store);
  const check: MiddlewareHandler<{ Variables: AuthVariables & IdempotencyVariables }> =
    async function idempotencyCheck(c, next) {
      const key = c.req.header("idempotency-key")!;
      if (!KEY.test(key)) {
        throw ApiError.badRequest(
          `Idempotency key "${key}" is not 1 to 255 visible ASCII characters`,
        );
      }
      const at = now();
      const path = c.req.path.replace(/\/+$/, "");
      const principal = c.get("principal");
      // The schemas claim too: a token confined elsewhere must not be shown the answer.
      const scope = [principal.subject, principal.schemas?.join(",") ?? "*", c.req.method, path]
        .join("\u0000");
      const slot = `${scope}\u0000${key}`;
      if (running.has(slot)) throw ApiError.idempotencyKeyInUse(key);
      running.add(slot);
      try {
        const kept = await answers.find(scope, key, at);
        const digest = new RequestDigest();
        digest.update(new TextEncoder().encode(requestHead(c)));
        const streamed = streamedBody(c.req.method, path);
        // A buffered body has been read already (within its limit), for the validator.
        if (!streamed) digest.update(new Uint8Array(await c.req.arrayBuffer()));
        if (kept) {
          if (streamed) await readStreamed(c, path, digest, options);
          if (digest.hex() !== kept.fingerprint) throw ApiError.idempotencyKeyReused(key);
          return replay(c, kept.answer);
        }
        c.set("idempotency", { scope, key, digest, at });
        await next();
      } finally {
        running.delete(slot);
      }
    };
  return async function idempotency(c, next) {
    const key = c.req.header("idempotency-key");
    if (key !== undefined && WRITES.has(c.req.method)) {
      c.set("idempotencyCheck", check as MiddlewareHandler);
    }
    await next();
  };
}

/**
 * The place in a route's middleware, after its scope check (see `scoped()`), where the work
 * left for a matched route runs: the read of a buffered body (`bufferedBody()` of body.ts),
 * then the check {@link idempotency} left for a keyed write, which fingerprints that body.
 */
export const afterScope: MiddlewareHandler = async function afterScope(c, next) {
  await readBufferedBody(c);
  const check: MiddlewareHandler | undefined = c.get("idempotencyCheck");
  return check ? await check(c, next) : await next();
};

/**
 * The key a route hands its write, with the answer it gives for the write's result; the
 * route answers with the same function, so a replay is the first answer exactly.
 */
export function keyedWrite<R>(
  c: Context,
  answer: (result: R) => StoredAnswer,
): KeyedWrite<R> | undefined {
  const keyed: KeyedRequest | undefined = c.get("idempotency");
  if (!keyed) return undefined;
  return {
    scope: keyed.scope,
    key: keyed.key,
    at: keyed.at,
    since: keyed.at - IDEMPOTENCY_TTL_MS,
    fingerprint: () => keyed.digest.hex(),
    answer,
  };
}

/** The digest a streamed route feeds with its body, when the request has a key. */
export function bodyDigest(c: Context): BodyDigest | undefined {
  return (c.get("idempotency") as KeyedRequest | undefined)?.digest;
}

/** The response with the answer a streamed route gives: the one its write keeps for a retry. */
export function respond(c: Context, answer: StoredAnswer): Response {
  return c.json(answer.body, 200, answer.headers);
}

/** The kept answer again, marked as a replay. */
function replay(c: Context, answer: StoredAnswer): Response {
  return c.json(answer.body, answer.status as 200, {
    ...answer.headers,
    "idempotent-replayed": "true",
  });
}

/**
 * What a request says besides its body and route that decides its answer: its query, its
 * media type (a retry as `text/plain` is another request: fresh, it would be 415; a multipart
 * boundary, new on each send, is left out) and its `If-Match` (a retry naming another
 * version is another request: fresh, it could be 409).
 */
function requestHead(c: Context): string {
  const mediaType = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const ifMatch = c.req.header("if-match") ?? "";
  return `${new URL(c.req.url).search}\u0000${mediaType}\u0000${ifMatch}\u0000`;
}

/** Reads a streamed body as its route would, only to fingerprint it. */
async function readStreamed(
  c: Context,
  path: string,
  digest: RequestDigest,
  options: IdempotencyOptions,
): Promise<void> {
  const limits = { maxBytes: options.maxUploadBytes, idleMs: options.bodyIdleMs, digest };
  if (!MULTIPART_BODY.test(path)) return await readBody(c.req.raw.body, limits, () => {});
  await digestMultipart(c.req.raw.body, c.req.header("content-type"), limits);
}
