/**
 * Routes that move rows: JSON upload, record insert, record reads and summaries (exports are
 * in exports.ts, changes by filter in record_changes.ts).
 *
 * Their bodies are streamed to the spool directory, never validated as one JSON value,
 * so the routes are documented with their body schema but registered without its validator.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type AuthVariables, checkSchemaAccess } from "../auth.ts";
import { noteRowsLoaded } from "../observe.ts";
import type { Table } from "../../catalog/model.ts";
import { checkTableName } from "../../catalog/names.ts";
import { IF_EXISTS } from "../../catalog/uploads.ts";
import { ApiError } from "../../errors.ts";
import type { RowsDeps } from "../../service/bodies.ts";
import * as records from "../../service/records.ts";
import * as uploads from "../../service/uploads.ts";
import {
  BooleanQuery,
  CountQuery,
  errorResponses,
  filtersParameter,
  parseBoolean,
  parseChoice,
  parseCount,
  ReadQueryShape,
  SchemaQuery,
  SummaryShape,
  TableDefinitionShape,
  TableParams,
  TableShape,
} from "./shapes.ts";
import { schemaOf } from "./tables.ts";
import { streaming } from "./body.ts";
import { templateUse, TemplateUseQuery } from "./templates.ts";
import { scoped } from "./scoped.ts";
import { validationHook } from "./validation.ts";
import {
  IdempotencyKeyHeader,
  type IdempotencyVariables,
  keyedWrite,
  respond,
} from "./idempotency.ts";
import { incomingBody, parseDefinition, uploaded } from "./upload_bodies.ts";

/** Largest page of records. */
export const MAX_RECORDS_PAGE = 10_000;

export type Env = { Variables: AuthVariables & IdempotencyVariables };

/** The query of every upload. */
const UploadQuery = z.object({
  schema: SchemaQuery,
  if_exists: z.string().optional().openapi({ enum: [...IF_EXISTS] }),
  ...TemplateUseQuery,
  dry_run: BooleanQuery.openapi({
    type: "boolean",
    description: "Load as the upload would, then roll back: the answer is what it would do " +
      "(`dry_run`, `table`, `inserted`, the first 100 `records` as stored, the `errors` it " +
      "would refuse the rows with) and nothing is written, not even the table",
  }),
});

/** What a dry run of an upload answers. */
const UploadPreviewShape = z.object({
  dry_run: z.literal(true),
  table: TableShape.nullable().openapi({
    description: "The table as the upload would leave it; null when the rows are refused " +
      "and no table exists",
  }),
  inserted: z.number().int(),
  records: z.array(z.record(z.string(), z.unknown())).openapi({
    description: "The first 100 rows as the table would hold them",
  }),
  errors: z.array(z.record(z.string(), z.unknown())).openapi({
    description: "What the upload would refuse, as its 422's details (`row`, `column`, " +
      "`message`; `sheet`, `sheet_row`); empty when it would succeed",
  }),
  message: z.string().optional().openapi({ description: "The refusal's message, if refused" }),
  headers: z.array(z.string()).optional().openapi({
    description: "The names of the file's columns as read (a header row, or the keys of JSON " +
      "rows), after the `headers` mapping; absent when refused before they were read",
  }),
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
      description: "The table and the number of rows inserted; with `dry_run=true` what the " +
        "upload would do",
      content: {
        "application/json": {
          schema: z.union([
            z.object({ table: TableShape, inserted: z.number().int() }),
            UploadPreviewShape,
          ]),
        },
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
      on_conflict: z.string().optional().openapi({ enum: [...records.ON_CONFLICT] }),
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
    description: 'JSON text `{"table": definition, "headers": {"File header": "column"}}`; ' +
      "without a definition the header names the columns and their types are inferred; " +
      "`headers` renames the file's headers before they are matched or inferred",
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
    description: "The table and the number of rows inserted; with `dry_run=true` what the " +
      "upload would do",
    content: {
      "application/json": {
        schema: z.union([
          z.object({ table: TableShape, inserted: z.number().int() }),
          UploadPreviewShape,
        ]),
      },
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

/** The filters of a read, for the document only (see {@link filtersParameter}). */
const READ_FILTERS = filtersParameter(
  "Filters, each a parameter named by its column: `<column>=[not.]<op>.<value>`",
  { age: "gte.18", name: "ilike.a*" },
);

const readRecords = createRoute(scoped("tables:read", {
  method: "get",
  operationId: "readRecords",
  path: "/table/{table_name}/records",
  summary: "Read a page of records: filtered, ordered, walked by cursor",
  description: "Besides the parameters listed, every parameter names a column and filters on " +
    "it, PostgREST-style, all ANDed: `<column>=[not.]<op>.<value>` with op `eq`, `neq`, `gt`, " +
    "`gte`, `lt`, `lte`, `like`, `ilike` (`*` for `%`), `in.(a,b)`, `is.null`, `is.true`, " +
    "`is.false`; values are cast to the column's type. A parameter that names no column is 400. " +
    "With `after` (empty to start) the answer carries `next`, the cursor of the next page, null " +
    "after the last.",
  tags: ["rows"],
  parameters: [READ_FILTERS],
  request: {
    params: TableParams,
    query: z.object({
      schema: SchemaQuery,
      offset: CountQuery,
      limit: CountQuery,
      ...ReadQueryShape,
    }),
  },
  responses: {
    200: {
      description: "Records in the asked order (by default primary key order, else insertion " +
        "order)",
      content: {
        "application/json": {
          schema: z.object({
            records: z.array(z.record(z.string(), z.unknown())),
            total: z.number().int().optional().openapi({
              description: "Records the filters let through; absent with `count=none`",
            }),
            estimated: z.boolean().optional().openapi({
              description: "With `count=estimated`: true when `total` is an estimate, false " +
                "when it was counted",
            }),
            next: z.string().nullable().optional().openapi({
              description: "With `after`: the cursor of the next page, null after the last",
            }),
          }),
          example: {
            records: [{ id: 1, name: "Ada" }, { id: 2, name: "Grace" }],
            total: 3,
            next: "eyJvIjoiW1tcImlkXCIsXCJhc2NcIixcImxhc3RcIl1dIiwidiI6WyIyIl19",
          },
        },
      },
    },
    ...errorResponses(404),
  },
}));

const summarizeRecords = createRoute(scoped("tables:read", {
  method: "get",
  operationId: "summarizeRecords",
  path: "/table/{table_name}/summary",
  summary: "Summarize the records, per column, optionally filtered",
  description: "Filters as in reading records (`<column>=[not.]<op>.<value>`); `select` " +
    "limits the columns. Per column: non-null count, nulls, approximate distinct count, min, " +
    "max, and for numbers the mean, sample standard deviation and approximate quartiles; with " +
    "`bins` a histogram of numbers, dates and timestamps, with `top` the most frequent values " +
    "of text, booleans and UUIDs. `bins` and `top` are never filters here.",
  tags: ["rows"],
  parameters: [READ_FILTERS],
  request: {
    params: TableParams,
    query: z.object({
      schema: SchemaQuery,
      select: ReadQueryShape.select,
      bins: z.string().optional().openapi({
        type: "integer",
        minimum: 0,
        maximum: records.MAX_BINS,
        description: "Bins of a histogram of each number, date and timestamp column " +
          "(`histogram`); 0 or absent for none",
        example: 20,
      }),
      top: z.string().optional().openapi({
        type: "integer",
        minimum: 0,
        maximum: records.MAX_TOP,
        description: "The most frequent values of each text, boolean and UUID column, at most " +
          "this many (`top`); 0 or absent for none",
        example: 10,
      }),
    }),
  },
  responses: {
    200: {
      description: "Figures of the records the filters let through",
      content: { "application/json": { schema: SummaryShape } },
    },
    ...errorResponses(404),
  },
}));

/** Row routes over `deps.store`. */
export function rowRoutes(deps: RowsDeps): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });

  /** What every upload route hands its service besides the body. */
  const uploadOptions = (c: Context<Env>) => {
    const dryRun = parseBoolean("dry_run", c.req.query("dry_run"));
    return {
      ifExists: parseChoice("if_exists", c.req.query("if_exists"), IF_EXISTS, "fail"),
      template: templateUse(c),
      // A dry run writes nothing, so it keeps no answer for a retry.
      keyed: dryRun ? undefined : keyedWrite(c, uploaded),
      readDefinition: parseDefinition,
      dryRun,
    };
  };

  /** Runs an upload, or its dry run, and answers it. */
  const answerUpload = async (
    c: Context<Env>,
    options: uploads.UploadRequest,
    upload: (options: uploads.UploadRequest) => Promise<uploads.Uploaded>,
  ) => {
    if (options.dryRun) {
      const preview = await uploads.previewUpload(
        deps,
        address(c),
        (columnsRead) => upload({ ...options, columnsRead }),
      );
      return c.json(preview, 200);
    }
    const result = await upload(options);
    noteRowsLoaded(c, result.inserted);
    return respond(c, uploaded(result));
  };

  streaming(app, uploadJson, (c) => {
    const ref = address(c);
    return answerUpload(
      c,
      uploadOptions(c),
      (options) => uploads.uploadJson(deps, ref, incomingBody(c), options),
    );
  });

  streaming(app, insertRecords, async (c) => {
    const ref = address(c);
    const onConflict = parseChoice(
      "on_conflict",
      c.req.query("on_conflict"),
      records.ON_CONFLICT,
      "fail",
    );
    const answer = (result: { table: Table; inserted: number }) => ({
      status: 200,
      body: result,
    });
    const result = await records.insertRecords(
      deps,
      ref,
      incomingBody(c),
      onConflict,
      keyedWrite(c, answer),
    );
    noteRowsLoaded(c, result.inserted);
    return respond(c, answer(result));
  });

  streaming(app, uploadExcel, (c) => {
    const ref = address(c);
    return answerUpload(
      c,
      uploadOptions(c),
      (options) =>
        uploads.uploadSpreadsheet(deps, ref, incomingBody(c), {
          ...options,
          sheet: c.req.query("sheet"),
        }),
    );
  });

  streaming(app, uploadCsv, (c) => {
    const ref = address(c);
    return answerUpload(
      c,
      uploadOptions(c),
      (options) => uploads.uploadCsv(deps, ref, incomingBody(c), options),
    );
  });

  app.openapi(readRecords, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const query = c.req.valid("query");
    const schema = schemaOf(query.schema);
    checkSchemaAccess(c, schema);
    const offset = parseCount("offset", query.offset, 0, Number.MAX_SAFE_INTEGER);
    const limit = parseCount("limit", query.limit, 100, MAX_RECORDS_PAGE);
    const params = new URL(c.req.url).searchParams;
    const { json, total, estimated, next } = await records.readRecords(
      deps,
      { schema, name },
      params,
      offset,
      limit,
    );
    // The records arrive as JSON text from the database; they are not parsed again here.
    // Typed as the documented JSON, which it is, though assembled as text.
    const counted = (total === undefined ? "" : `,"total":${total}`) +
      (estimated === undefined ? "" : `,"estimated":${estimated}`);
    const more = next === undefined ? "" : `,"next":${JSON.stringify(next)}`;
    return c.body(`{"records":${json}${counted}${more}}`, 200, {
      "content-type": "application/json; charset=utf-8",
    }) as never;
  });

  app.openapi(summarizeRecords, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const schema = schemaOf(c.req.valid("query").schema);
    checkSchemaAccess(c, schema);
    const params = new URL(c.req.url).searchParams;
    for (const parameter of records.SUMMARY_PARAMETERS) {
      if (params.getAll(parameter).length > 1) {
        throw ApiError.badRequest(`Query parameter ${parameter} is given more than once`);
      }
    }
    const options = {
      bins: parseCount("bins", params.get("bins") ?? undefined, 0, records.MAX_BINS),
      top: parseCount("top", params.get("top") ?? undefined, 0, records.MAX_TOP),
    };
    return c.json(await records.summarizeRecords(deps, { schema, name }, params, options), 200);
  });

  return app;
}

/** The table a row route addresses, checked, and the token's access to its schema. */
export function address(c: Context<Env>): { name: string; schema: string } {
  const name = checkTableName(c.req.param("table_name") ?? "");
  const schemas = c.req.queries("schema");
  if (schemas && schemas.length > 1) {
    throw ApiError.badRequest("Query parameter schema is given more than once");
  }
  const schema = schemaOf(schemas?.[0]);
  checkSchemaAccess(c, schema);
  return { name, schema };
}
