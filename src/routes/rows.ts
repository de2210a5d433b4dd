/**
 * Routes that move rows: JSON upload, record insert, record reads and CSV export.
 *
 * Their bodies are streamed to the spool directory, never validated as one JSON value,
 * so the routes are documented with their body schema but registered without its validator.
 *
 * @module
 */

import { createRoute, OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type AuthVariables, checkSchemaAccess } from "../auth/middleware.ts";
import { bodyCounter, noteRowsLoaded, streamedResponse } from "../observe.ts";
import { planTable, type TablePlan } from "../catalog/definition.ts";
import type { Table, TableRef } from "../catalog/model.ts";
import { checkTableName } from "../catalog/names.ts";
import { ApiError } from "../errors.ts";
import { spoolMultipart } from "../ingest/multipart.ts";
import {
  checkZip,
  detectFormat,
  readSheetApart,
  type SheetLimits,
  type SheetRows,
} from "../ingest/sheet.ts";
import { discard, RowsInParts, spoolJsonRows, type SpoolOptions } from "../ingest/spool.ts";
import { IF_EXISTS } from "../catalog/uploads.ts";
import { ON_CONFLICT, type RowsFile, type Store } from "../store/store.ts";
import {
  CountQuery,
  errorResponses,
  parseChoice,
  parseCount,
  SchemaQuery,
  TableDefinitionShape,
  TableParams,
  TableShape,
} from "./shapes.ts";
import { schemaOf } from "./tables.ts";
import { oneDefinition, planFromTemplate, TemplateUseQuery } from "./templates.ts";
import { scoped } from "./scoped.ts";
import { validationHook } from "./validation.ts";
import {
  bodyDigest,
  IdempotencyKeyHeader,
  type IdempotencyVariables,
  keyedWrite,
  respond,
} from "./idempotency.ts";

/** Rows whose keys the spool pass collects itself. */
const KEY_SAMPLE_ROWS = 1000;

/**
 * Size of the parts a records body is spooled in: each part is loaded while the next
 * arrives. Large enough that DuckDB's parallel reader has work for every thread.
 */
const PART_BYTES = 32 * 1024 * 1024;

/** Largest page of records. */
export const MAX_RECORDS_PAGE = 10_000;

type Env = { Variables: AuthVariables & IdempotencyVariables };

/** What the row routes need besides the store. */
export interface RowsDeps {
  readonly store: Store;
  readonly spoolDir: string;
  readonly maxUploadBytes: number;
  readonly maxJsonBytes: number;
  readonly maxSheetRows: number;
  readonly maxSheetBytes: number;
  /** Longest wait for the next bytes of a body (408 past it). */
  readonly bodyIdleMs: number;
}

/** How many times its own size a spreadsheet may decompress to (the contract's 100×). */
const MAX_EXPANSION_RATIO = 100;

/** The query of every upload. */
const UploadQuery = z.object({
  schema: SchemaQuery,
  if_exists: z.string().optional().openapi({ enum: [...IF_EXISTS] }),
  ...TemplateUseQuery,
});

const uploadJson = createRoute(scoped("tables:write", {
  method: "post",
  operationId: "uploadJson",
  path: "/table/{table_name}/upload/json",
  summary: "Create, replace or append to a table from JSON rows",
  tags: ["rows"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: UploadQuery,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({
            table: TableDefinitionShape.nullish(),
            data: z.array(z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]))
              .nullish(),
          }),
          example: { data: [{ id: 1, name: "Ada" }, { id: 2, name: "Grace" }] },
        },
      },
    },
  },
  responses: {
    200: {
      description: "The table and the number of rows inserted",
      content: {
        "application/json": { schema: z.object({ table: TableShape, inserted: z.number().int() }) },
      },
    },
    ...errorResponses(404, 409, 413, 415, 422),
  },
}));

const insertRecords = createRoute(scoped("tables:write", {
  method: "post",
  operationId: "insertRecords",
  path: "/table/{table_name}/records",
  summary: "Insert records, failing, skipping or updating on key conflicts",
  tags: ["rows"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: z.object({
      schema: SchemaQuery,
      on_conflict: z.string().optional().openapi({ enum: [...ON_CONFLICT] }),
    }),
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.array(z.record(z.string(), z.unknown())),
          example: [{ id: 1, name: "Ada" }],
        },
      },
    },
  },
  responses: {
    200: {
      description: "The table and the counts",
      content: {
        "application/json": {
          schema: z.object({
            table: TableShape,
            inserted: z.number().int(),
            skipped: z.number().int().optional(),
            updated: z.number().int().optional(),
          }),
        },
      },
    },
    ...errorResponses(404, 409, 413, 415, 422),
  },
}));

/** The multipart body of the file uploads. */
const FileUploadBody = z.object({
  file: z.string().openapi({
    type: "string",
    format: "binary",
    description: "The file: xlsx, xlsm, xlsb, xls, ods or csv (told apart by its bytes)",
  }),
  body: z.string().optional().openapi({
    description: 'JSON text `{"table": definition}`; without it the header names the columns ' +
      "and their types are inferred",
    // Swagger UI's "Try it out" sends the example as the part: it must be a definition the
    // upload accepts, not the word "string".
    example: JSON.stringify({
      table: {
        columns: [{ name: "id", type: "BIGINT" }, { name: "name", type: "VARCHAR" }],
      },
    }),
  }),
});

const fileUploadResponses = {
  200: {
    description: "The table and the number of rows inserted",
    content: {
      "application/json": { schema: z.object({ table: TableShape, inserted: z.number().int() }) },
    },
  },
  ...errorResponses(404, 409, 413, 415, 422),
};

const uploadExcel = createRoute(scoped("tables:write", {
  method: "post",
  operationId: "uploadExcel",
  path: "/table/{table_name}/upload/excel",
  summary: "Create, replace or append to a table from a spreadsheet (or CSV) file",
  description: "The first non-empty row of the sheet is the header; each later non-empty row " +
    "is a record. Headers match columns by trimmed name. Dates become DATE/TIMESTAMP values, " +
    "formula cells give their cached values.",
  tags: ["rows"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: UploadQuery.extend({
      sheet: z.string().optional().openapi({ description: "Sheet name or 0-based index" }),
    }),
    body: { required: true, content: { "multipart/form-data": { schema: FileUploadBody } } },
  },
  responses: fileUploadResponses,
}));

const uploadCsv = createRoute(scoped("tables:write", {
  method: "post",
  operationId: "uploadCsv",
  path: "/table/{table_name}/upload/csv",
  summary: "Create, replace or append to a table from a CSV file",
  description: "Delimiter, quoting and (without a definition) column types are detected; " +
    "the first line is the header.",
  tags: ["rows"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: UploadQuery,
    body: { required: true, content: { "multipart/form-data": { schema: FileUploadBody } } },
  },
  responses: fileUploadResponses,
}));

const readRecords = createRoute(scoped("tables:read", {
  method: "get",
  operationId: "readRecords",
  path: "/table/{table_name}/records",
  summary: "Read a page of records",
  tags: ["rows"],
  request: {
    params: TableParams,
    query: z.object({ schema: SchemaQuery, offset: CountQuery, limit: CountQuery }),
  },
  responses: {
    200: {
      description: "Records in table order (primary key order when there is one)",
      content: {
        "application/json": {
          schema: z.object({
            records: z.array(z.record(z.string(), z.unknown())),
            total: z.number().int(),
          }),
        },
      },
    },
    ...errorResponses(404),
  },
}));

/**
 * Widest shift of an export's file name from UTC, in hours: every zone's offset fits, and
 * minutes or seconds sent for hours (330 for India) are refused rather than believed.
 */
const MAX_OFFSET_HOURS = 24;

const exportCsv = createRoute(scoped("tables:read", {
  method: "get",
  operationId: "exportCsv",
  path: "/table/{table_name}/records/csv",
  summary: "Export every record as CSV",
  tags: ["rows"],
  request: {
    params: TableParams,
    query: z.object({
      schema: SchemaQuery,
      timezone_offset: z.string().optional().openapi({
        type: "number",
        minimum: -MAX_OFFSET_HOURS,
        maximum: MAX_OFFSET_HOURS,
        description: "Hours east of UTC (fractions allowed; default 0) of the export time in " +
          "the file name",
        example: 5.5,
      }),
    }),
  },
  responses: {
    200: {
      description: "CSV, header row first, named `<table>_<YYYYMMDD_HHMMSS>.csv` by the " +
        "export time (UTC shifted by `timezone_offset`)",
      headers: z.object({
        "content-disposition": z.string().openapi({
          example: 'attachment; filename="users_20260102_030405.csv"',
        }),
      }),
      content: { "text/csv": { schema: z.string() } },
    },
    ...errorResponses(404),
  },
}));

/** Row routes over `deps.store`. */
export function rowRoutes(deps: RowsDeps): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });

  streaming(app, uploadJson, async (c) => {
    const { name, schema } = address(c);
    const ifExists = parseChoice("if_exists", c.req.query("if_exists"), IF_EXISTS, "fail");
    const fromTemplate = await planFromTemplate(c, deps.store, { schema, name });
    const file = await spool(c, deps);
    try {
      const plan = oneDefinition(fromTemplate, file.table) ??
        (file.table === undefined
          ? undefined
          : planTable({ schema, name }, parseDefinition(file.table)));
      const keyed = keyedWrite(c, uploaded);
      const result = await deps.store.uploadTable({ schema, name }, file, {
        plan,
        ifExists,
        keyed,
      });
      noteRowsLoaded(c, result.inserted);
      return respond(c, uploaded(result));
    } finally {
      await discard(file);
    }
  });

  streaming(app, insertRecords, async (c) => {
    const { name, schema } = address(c);
    const onConflict = parseChoice("on_conflict", c.req.query("on_conflict"), ON_CONFLICT, "fail");
    checkJsonType(c);
    const rows = new RowsInParts(c.req.raw.body, c.req.header("content-length"), {
      ...spoolOptions(c, deps, false),
      // Only fail-mode loads use parts early; the others would only join them again.
      partBytes: onConflict === "fail" ? PART_BYTES : Infinity,
    });
    try {
      const answer = (result: { table: Table; inserted: number }) => ({
        status: 200,
        body: result,
      });
      const result = await deps.store.insertRecords(
        { schema, name },
        rows,
        onConflict,
        keyedWrite(c, answer),
      );
      noteRowsLoaded(c, result.inserted);
      return respond(c, answer(result));
    } finally {
      await rows.discard();
    }
  });

  streaming(app, uploadExcel, async (c) => {
    const { name, schema } = address(c);
    const ifExists = parseChoice("if_exists", c.req.query("if_exists"), IF_EXISTS, "fail");
    const fromTemplate = await planFromTemplate(c, deps.store, { schema, name });
    return await withUpload(c, deps, async ({ file, body }, spooled) => {
      const given = definitionPart(body, { schema, name });
      const plan = oneDefinition(fromTemplate, given) ?? given;
      const format = await detectFormat(file.path);
      const keyed = keyedWrite(c, uploaded);
      if (format === "csv") {
        return await deps.store.uploadCsv({ schema, name }, file.path, {
          plan,
          ifExists,
          keyed,
          separatorLines: file.separatorLines,
        });
      }
      const limits: SheetLimits = {
        maxRows: deps.maxSheetRows,
        maxExpandedBytes: deps.maxSheetBytes,
        maxExpansionRatio: MAX_EXPANSION_RATIO,
      };
      const bytes = await Deno.readFile(file.path);
      if (format === "zip") checkZip(bytes, limits);
      const outPath = spooled(`${deps.spoolDir}/${crypto.randomUUID()}.json`);
      const rows = await readSheetApart(bytes, { ...limits, sheet: c.req.query("sheet"), outPath });
      try {
        return await deps.store.uploadTable({ schema, name }, rows, { plan, ifExists, keyed });
      } catch (error) {
        throw inSheetTerms(error, rows);
      }
    });
  });

  streaming(app, uploadCsv, async (c) => {
    const { name, schema } = address(c);
    const ifExists = parseChoice("if_exists", c.req.query("if_exists"), IF_EXISTS, "fail");
    const fromTemplate = await planFromTemplate(c, deps.store, { schema, name });
    return await withUpload(c, deps, async ({ file, body }) => {
      const given = definitionPart(body, { schema, name });
      const plan = oneDefinition(fromTemplate, given) ?? given;
      if (await detectFormat(file.path) !== "csv") {
        throw ApiError.unsupportedMediaType(
          "The file is not CSV text; send spreadsheets to upload/excel",
        );
      }
      return await deps.store.uploadCsv({ schema, name }, file.path, {
        plan,
        ifExists,
        keyed: keyedWrite(c, uploaded),
        separatorLines: file.separatorLines,
      });
    });
  });

  app.openapi(readRecords, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const query = c.req.valid("query");
    const schema = schemaOf(query.schema);
    checkSchemaAccess(c, schema);
    const offset = parseCount("offset", query.offset, 0, Number.MAX_SAFE_INTEGER);
    const limit = parseCount("limit", query.limit, 100, MAX_RECORDS_PAGE);
    const { json, total } = await deps.store.readRecords({ schema, name }, offset, limit);
    // The records arrive as JSON text from the database; they are not parsed again here.
    // Typed as the documented JSON, which it is, though assembled as text.
    return c.body(`{"records":${json},"total":${total}}`, 200, {
      "content-type": "application/json; charset=utf-8",
    }) as never;
  });

  app.openapi(exportCsv, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const query = c.req.valid("query");
    const schema = schemaOf(query.schema);
    checkSchemaAccess(c, schema);
    const offsetHours = parseOffsetHours(query.timezone_offset);
    const { table, stream } = await deps.store.exportCsv({ schema, name });
    return streamedResponse(c, stream, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${
        exportFileName(table.name, Date.now(), offsetHours)
      }"`,
    }) as never;
  });

  return app;
}

/** `timezone_offset`: hours from UTC, within a day either way; absent or empty is 0. */
function parseOffsetHours(value: string | undefined): number {
  if (value === undefined || value === "") return 0;
  const hours = Number(value);
  if (!/^[+-]?\d{1,2}(?:\.\d+)?$/.test(value) || Math.abs(hours) > MAX_OFFSET_HOURS) {
    throw ApiError.badRequest(
      `Query parameter timezone_offset must be hours from -${MAX_OFFSET_HOURS} to ` +
        `${MAX_OFFSET_HOURS}, such as 5.5, not "${value}"`,
    );
  }
  return hours;
}

/** `<table>_<YYYYMMDD_HHMMSS>.csv`: the moment `now`, shifted `offsetHours` from UTC. */
function exportFileName(table: string, now: number, offsetHours: number): string {
  const shifted = new Date(now + Math.round(offsetHours * 3600) * 1000);
  // 2026-01-02T03:04:05.678Z → 20260102_030405
  const stamp = shifted.toISOString().slice(0, 19).replaceAll(/[-:]/g, "").replace("T", "_");
  return `${table}_${stamp}.csv`;
}

/**
 * Registers a route whose body is streamed by its handler: the OpenAPI document gets the
 * full route, the router gets it without the body validator (which would read the body).
 */
function streaming(
  app: OpenAPIHono<Env>,
  route: RouteConfig,
  handler: (c: Context<Env>) => Promise<Response>,
): void {
  // The middleware is the router's, not the document's: openapi() leaves it out, so here too.
  const { middleware: _, ...documented } = route;
  app.openAPIRegistry.registerPath(documented);
  app.openapi(
    { ...route, request: { ...route.request, body: undefined }, hide: true },
    handler as never,
  );
}

function address(c: Context<Env>): { name: string; schema: string } {
  const name = checkTableName(c.req.param("table_name") ?? "");
  const schemas = c.req.queries("schema");
  if (schemas && schemas.length > 1) {
    throw ApiError.badRequest("Query parameter schema is given more than once");
  }
  const schema = schemaOf(schemas?.[0]);
  checkSchemaAccess(c, schema);
  return { name, schema };
}

/**
 * Streams a multipart upload to the spool directory, runs `work` on it, and answers with
 * its table and count; every file spooled for it is removed afterwards.
 */
async function withUpload(
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
function uploaded(result: { table: Table; inserted: number }) {
  return { status: 200, body: { table: result.table, inserted: result.inserted } };
}

/** The plan in a file upload's `body` part (`{"table": definition}`), if it has one. */
function definitionPart(text: string | undefined, ref: TableRef): TablePlan | undefined {
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
function inSheetTerms(error: unknown, rows: SheetRows): unknown {
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
async function spool(c: Context<Env>, deps: RowsDeps): Promise<RowsFile> {
  checkJsonType(c);
  return await spoolJsonRows(
    c.req.raw.body,
    c.req.header("content-length"),
    spoolOptions(c, deps, true),
  );
}

function checkJsonType(c: Context<Env>): void {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
    throw ApiError.unsupportedMediaType("The request body must be application/json");
  }
}

function spoolOptions(c: Context<Env>, deps: RowsDeps, envelope: boolean): SpoolOptions {
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
function parseDefinition(value: unknown): z.infer<typeof TableDefinitionShape> {
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
