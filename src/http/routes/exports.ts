/**
 * The export routes: a table's records, filtered, selected and ordered as a page is, streamed
 * whole in one of the result formats.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { checkSchemaAccess } from "../auth.ts";
import { streamedResponse } from "../observe.ts";
import { checkTableName } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { RowsDeps } from "../../service/bodies.ts";
import * as records from "../../service/records.ts";
import * as downloads from "../../service/downloads.ts";
import type { ResultFormat } from "../../store/store.ts";
import {
  errorResponses,
  failureResponse,
  ReadQueryShape,
  SchemaQuery,
  TableParams,
} from "./shapes.ts";
import { schemaOf } from "./tables.ts";
import { scoped } from "./scoped.ts";
import { validationHook } from "./validation.ts";
import type { Env } from "./rows.ts";

/**
 * Widest shift of an export's file name from UTC, in hours: every zone's offset fits, and
 * minutes or seconds sent for hours (330 for India) are refused rather than believed.
 */
const MAX_OFFSET_HOURS = 24;

/** The content type of each export format. */
export const CONTENT_TYPES: Readonly<Record<ResultFormat, string>> = {
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson; charset=utf-8",
  json: "application/json; charset=utf-8",
  parquet: "application/vnd.apache.parquet",
};

/** What each export format is called in the OpenAPI document and what its body is. */
const EXPORTS: Readonly<
  Record<ResultFormat, { operationId: string; what: string; body: z.ZodType }>
> = {
  csv: { operationId: "exportCsv", what: "CSV, header row first", body: z.string() },
  ndjson: { operationId: "exportNdjson", what: "NDJSON, one object per line", body: z.string() },
  json: {
    operationId: "exportJson",
    what: "JSON, an array of objects",
    body: z.array(z.record(z.string(), z.unknown())),
  },
  parquet: {
    operationId: "exportParquet",
    what: "Parquet",
    body: z.string().openapi({ format: "binary" }),
  },
};

/** An export's query parameters but its filters, which are any others: the ticket's too. */
const ExportQuery = z.object({
  schema: SchemaQuery,
  select: ReadQueryShape.select,
  order: ReadQueryShape.order,
  timezone_offset: z.string().optional().openapi({
    type: "number",
    minimum: -MAX_OFFSET_HOURS,
    maximum: MAX_OFFSET_HOURS,
    description: "Hours east of UTC (fractions allowed; default 0) of the export time in " +
      "the file name",
    example: 5.5,
  }),
});

/**
 * The export route of one format. Each format has a path of its own rather than a `{format}`
 * parameter, so that logs and metrics name the format in their `route`.
 */
function exportRoute(format: ResultFormat) {
  const { operationId, what, body } = EXPORTS[format];
  return createRoute(scoped("tables:read", {
    method: "get",
    operationId,
    path: `/table/{table_name}/records/${format}`,
    summary: `Export records as ${what}`,
    description: "Filters (`column=op.value`, as in reading records), `select` and `order` " +
      "apply as they do to a page; there are no pages (`offset`, `limit`, `after` and `count` " +
      "are 400).",
    tags: ["rows"],
    request: {
      params: TableParams,
      query: ExportQuery,
    },
    responses: {
      200: {
        description: "The records the filters let through, in record order unless `order` " +
          "says otherwise, from one snapshot, named " +
          `\`<table>_<YYYYMMDD_HHMMSS>.${format}\` by the export time (UTC shifted by ` +
          "`timezone_offset`)",
        headers: z.object({
          "content-disposition": z.string().openapi({
            example: `attachment; filename="users_20260102_030405.${format}"`,
          }),
        }),
        content: { [CONTENT_TYPES[format].split(";")[0]!]: { schema: body } },
      },
      ...errorResponses(404),
      ...(format === "parquet"
        ? { 422: failureResponse(422, "A value Parquet cannot hold (a negative interval)") }
        : {}),
    },
  }));
}

/** The route that issues a download ticket for the export of one format. */
function ticketRoute(format: ResultFormat) {
  const { operationId } = EXPORTS[format];
  return createRoute(scoped("tables:read", {
    method: "post",
    operationId: `${operationId}Ticket`,
    path: `/table/{table_name}/records/${format}/ticket`,
    summary: `A single-use link to the ${format} export, without the token in its URL`,
    description: "Takes the export's parameters (filters, `select`, `order`, " +
      "`timezone_offset`) and checks them as the export would; answers a ticket that " +
      `\`GET /api/v1/download/{ticket}\` redeems once, without a token, within ` +
      `${downloads.TICKET_SECONDS} seconds, streaming the export with every row.`,
    tags: ["rows"],
    request: {
      params: TableParams,
      query: ExportQuery,
    },
    responses: {
      200: {
        description: "The ticket, the path that redeems it and when it expires",
        content: {
          "application/json": {
            schema: z.object({
              ticket: z.string(),
              url: z.string(),
              expires_at: z.string(),
            }),
            example: {
              ticket: "q9Vb3c0lJkG2bQm3oVx1o7lY1mYxZr2cS8i4gL0tW3E",
              url: "/api/v1/download/q9Vb3c0lJkG2bQm3oVx1o7lY1mYxZr2cS8i4gL0tW3E",
              expires_at: "2026-11-29T07:00:00.000Z",
            },
          },
        },
      },
      ...errorResponses(404),
    },
  }));
}

/** Export routes over `deps.store`, one per format. */
export function exportRoutes(deps: RowsDeps): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });
  for (const format of records.RESULT_FORMATS) {
    app.openapi(exportRoute(format), async (c) => {
      const name = checkTableName(c.req.valid("param").table_name);
      const query = c.req.valid("query");
      const schema = schemaOf(query.schema);
      checkSchemaAccess(c, schema);
      const offsetHours = parseOffsetHours(query.timezone_offset);
      const params = new URL(c.req.url).searchParams;
      const { stream, fileName } = await records.exportRecords(
        deps,
        { schema, name },
        format,
        params,
        offsetHours,
      );
      return streamedResponse(c, stream, {
        "content-type": CONTENT_TYPES[format],
        "content-disposition": `attachment; filename="${fileName}"`,
      }) as never;
    });
    app.openapi(ticketRoute(format), async (c) => {
      const name = checkTableName(c.req.valid("param").table_name);
      const query = c.req.valid("query");
      const schema = schemaOf(query.schema);
      checkSchemaAccess(c, schema);
      const offsetHours = parseOffsetHours(query.timezone_offset);
      const principal = c.get("principal");
      const holder = {
        subject: principal.subject,
        scopes: [...principal.scopes],
        ...(principal.schemas ? { schemas: [...principal.schemas] } : {}),
      };
      const params = new URL(c.req.url).searchParams;
      const ticket = await downloads.issueTicket(
        deps,
        holder,
        { schema, name },
        format,
        params,
        offsetHours,
      );
      return c.json(ticket, 200, { "cache-control": "no-store" });
    });
  }

  return app;
}

/** `timezone_offset`: hours from UTC, within a day either way; absent or empty is 0. */
export function parseOffsetHours(value: string | undefined): number {
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
