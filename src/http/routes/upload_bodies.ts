/**
 * The bodies of the row routes: spooling records and uploads, the definition part of an
 * upload, and what a spreadsheet's failures say in its own terms.
 *
 * @module
 */

import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyCounter, noteRowsLoaded } from "../observe.ts";
import { planTable, type TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { spoolMultipart } from "../../ingest/multipart.ts";
import type { SheetRows } from "../../ingest/sheet.ts";
import { discard, type SpooledRows, spoolJsonRows, type SpoolOptions } from "../../ingest/spool.ts";
import { TableDefinitionShape } from "./shapes.ts";
import { validationHook } from "./validation.ts";
import { bodyDigest, respond } from "./idempotency.ts";
import { type Env, KEY_SAMPLE_ROWS, type RowsDeps } from "./rows.ts";

/**
 * Streams a multipart upload to the spool directory, runs `work` on it, and answers with
 * its table and count; every file spooled for it is removed afterwards.
 */
export async function withUpload(
  c: Context<Env>,
  deps: RowsDeps,
  work: (
    upload: Awaited<ReturnType<typeof spoolMultipart>>,
    spooled: (path: string) => string,
  ) => Promise<{ table: Table; inserted: number }>,
): Promise<Response> {
  const upload = await spoolMultipart(c.req.raw.body, c.req.header("content-type"), {
    spoolDir: deps.spoolDir,
    maxBytes: deps.maxUploadBytes,
    idleMs: deps.bodyIdleMs,
    maxBodyPartBytes: deps.maxJsonBytes,
    onBytes: bodyCounter(c),
    digest: bodyDigest(c),
  });
  const paths = [upload.file.path];
  try {
    const result = await work(upload, (path) => (paths.push(path), path));
    noteRowsLoaded(c, result.inserted);
    return respond(c, uploaded(result));
  } finally {
    for (const path of paths) await discard({ path });
  }
}

/** An upload's answer: its table and the rows it inserted. */
export function uploaded(result: { table: Table; inserted: number }) {
  return { status: 200, body: { table: result.table, inserted: result.inserted } };
}

/** The plan in a file upload's `body` part (`{"table": definition}`), if it has one. */
export function definitionPart(text: string | undefined, ref: TableRef): TablePlan | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw ApiError.badRequest('The body part is not JSON; send {"table": definition}');
  }
  if (value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) {
    throw ApiError.badRequest('The body part must be a JSON object: {"table": definition}');
  }
  const table = (value as { table?: unknown }).table;
  return table === undefined || table === null ? undefined : planTable(ref, parseDefinition(table));
}

/** A failed sheet load's details with the sheet's own row numbers beside the record index. */
export function inSheetTerms(error: unknown, rows: SheetRows): unknown {
  if (!(error instanceof ApiError) || !error.details?.some((d) => d.row !== undefined)) {
    return error;
  }
  const details = error.details.map((d) =>
    d.row === undefined || rows.sheetRows[d.row] === undefined
      ? d
      : { ...d, sheet: rows.sheet, sheet_row: rows.sheetRows[d.row] }
  );
  return new ApiError(error.status, error.type, error.message, {
    details,
    headers: { ...error.headers },
  });
}

/** Spools an upload body (`{"table": …, "data": [ … ]}`) whole. */
export async function spool(c: Context<Env>, deps: RowsDeps): Promise<SpooledRows> {
  checkJsonType(c);
  return await spoolJsonRows(
    c.req.raw.body,
    c.req.header("content-length"),
    spoolOptions(c, deps, true),
  );
}

export function checkJsonType(c: Context<Env>): void {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
    throw ApiError.unsupportedMediaType("The request body must be application/json");
  }
}

export function spoolOptions(c: Context<Env>, deps: RowsDeps, envelope: boolean): SpoolOptions {
  return {
    spoolDir: deps.spoolDir,
    maxBytes: deps.maxUploadBytes,
    idleMs: deps.bodyIdleMs,
    onBytes: bodyCounter(c),
    digest: bodyDigest(c),
    envelope,
    allowArrays: envelope,
    maxEnvelopeBytes: deps.maxJsonBytes,
    // Past the sample the spool only checks keys; DuckDB reads any it cannot vouch for.
    keySampleRows: KEY_SAMPLE_ROWS,
  };
}

/** The envelope's `table` member, checked against the definition shape (400 when wrong). */
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
