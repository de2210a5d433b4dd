/**
 * What a row route hands its service besides the query: the body with what watches it
 * (the request log's byte count, a keyed write's fingerprint), the check of a definition
 * the body gives, and the answer of an upload.
 *
 * @module
 */

import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyCounter } from "../observe.ts";
import type { Table } from "../../catalog/model.ts";
import type { IncomingBody } from "../../service/bodies.ts";
import { TableDefinitionShape } from "./shapes.ts";
import { validationHook } from "./validation.ts";
import { bodyDigest } from "./idempotency.ts";

/** The request's body as a row service reads it, counted and fingerprinted as it streams. */
export function incomingBody(c: Context): IncomingBody {
  return {
    stream: c.req.raw.body,
    contentType: c.req.header("content-type"),
    contentLength: c.req.header("content-length"),
    // Started only when the service reads the body: until then the log keeps the declared size.
    countBytes: () => bodyCounter(c),
    digest: bodyDigest(c),
  };
}

/** An upload's answer: its table and the rows it inserted. */
export function uploaded(result: { table: Table; inserted: number }) {
  return { status: 200, body: { table: result.table, inserted: result.inserted } };
}

/** A definition the body gives, checked against the definition shape (400 when wrong). */
export function parseDefinition(value: unknown): z.infer<typeof TableDefinitionShape> {
  const result = TableDefinitionShape.safeParse(value);
  if (!result.success) {
    validationHook({
      success: false,
      error: result.error,
      target: "json",
    });
  }
  return result.data!;
}
