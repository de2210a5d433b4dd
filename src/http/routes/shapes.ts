/**
 * The request and response shapes of the API as zod schemas: one source for validation and
 * for the OpenAPI document. `null` is accepted wherever a field is optional, because
 * clients in the field send it for every field they were not given.
 *
 * @module
 */

import { z } from "@hono/zod-openapi";
import { ApiError } from "../../errors.ts";

/** Column, request form. Unknown fields (such as a null `id`) are ignored. */
export const ColumnSpecShape = z.object({
  name: z.string(),
  type: z.string(),
  default: z.string().nullish(),
  is_nullable: z.boolean().nullish(),
}).openapi("ColumnSpec");

const KeySpecShape = z.object({
  name: z.string().nullish(),
  columns: z.array(z.string()),
});

const ForeignKeySpecShape = z.object({
  name: z.string().nullish(),
  column: z.string(),
  reference_table: z.string(),
  reference_column: z.string(),
  reference_schema: z.string().nullish(),
});

/** Constraints, request form. */
export const ConstraintsSpecShape = z.object({
  primary_key: KeySpecShape.nullish(),
  unique: z.array(KeySpecShape).nullish(),
  foreign_keys: z.array(ForeignKeySpecShape).nullish(),
}).openapi("ConstraintsSpec");

/** Table definition, request form. */
export const TableDefinitionShape = z.object({
  columns: z.array(ColumnSpecShape).nullish(),
  constraints: ConstraintsSpecShape.nullish(),
}).openapi("TableDefinition");

/** Column, update form: with `id` an existing column, without one a column to add. */
export const WantedColumnShape = ColumnSpecShape.extend({
  id: z.number().int().nullish().openapi({
    description: "The id of the existing column this entry keeps; absent for a new column",
  }),
}).openapi("WantedColumn");

/**
 * Table, update form: the wanted table. Absent or null fields are left as they are;
 * `columns` and `constraints`, when given, are complete.
 */
export const TableUpdateShape = z.object({
  name: z.string().nullish(),
  schema: z.string().nullish(),
  columns: z.array(WantedColumnShape).nullish(),
  constraints: ConstraintsSpecShape.nullish(),
}).openapi("TableUpdate");

/** Column, response form. */
export const ColumnShape = z.object({
  id: z.number().int(),
  name: z.string(),
  type: z.string(),
  default: z.string().nullable(),
  is_nullable: z.boolean(),
}).openapi("Column");

const KeyShape = z.object({ name: z.string(), columns: z.array(z.string()) });

/** Constraints, response form. */
export const ConstraintsShape = z.object({
  primary_key: KeyShape.nullable(),
  unique: z.array(KeyShape),
  foreign_keys: z.array(z.object({
    name: z.string(),
    column: z.string(),
    reference_table: z.string(),
    reference_column: z.string(),
    reference_schema: z.string(),
  })),
}).openapi("Constraints");

/** Table, response form. */
export const TableShape = z.object({
  name: z.string(),
  schema: z.string(),
  columns: z.array(ColumnShape),
  constraints: ConstraintsShape,
  template: z.object({ name: z.string(), version: z.string() }).optional().openapi({
    description: "The template version the table was made from; absent when it was not",
  }),
}).openapi("Table");

/** `{ table }`, the wrapper of every response that returns a table. */
export const TableResponseShape = z.object({ table: TableShape });

/** The error body every failure carries. */
export const ErrorShape = z.object({
  error: z.object({
    code: z.number().int(),
    type: z.string(),
    message: z.string(),
    details: z.array(z.record(z.string(), z.unknown())).optional(),
  }),
}).openapi("Error");

/** What each failure status means, as the OpenAPI document describes it. */
const FAILURES: Record<number, string> = {
  400: "Malformed request or invalid name",
  401: "Missing or invalid bearer token",
  403: "Token lacks the scope or the schema",
  404: "Not found",
  408: "The request body stopped arriving for `BODY_IDLE_SECONDS`; nothing was changed",
  409: "Conflict",
  413: "Body too large",
  415: "Unsupported content type",
  422: "Invalid definition or data",
  500: "Unexpected failure; the message quotes the request id of the logged error",
  501: "The engine in use does not do this; the message names what does",
  503: "The database cannot serve now (`Retry-After` says when to try again); nothing was changed",
  507: "The disk of the data directory is full; nothing was changed",
};

/** One failure response of the `Error` shape. */
export function failureResponse(
  status: number,
  description = FAILURES[status] ?? "Error",
): { description: string; content: object } {
  return { description, content: { "application/json": { schema: ErrorShape } } };
}

/**
 * The failure responses, for route definitions: `statuses` and those any API operation may
 * answer. Those that come of a body, or of an `Idempotency-Key`, `scoped()` adds.
 */
export function errorResponses(
  ...statuses: number[]
): Record<number, { description: string; content: object }> {
  return Object.fromEntries(
    [400, 401, 403, ...statuses, 500, 503, 507].map((status) => [status, failureResponse(status)]),
  );
}

/** The `ETag` header of an answer a conditional request may name. */
export const ETAG_HEADER = {
  ETag: {
    description: 'The answer\'s version (weak, `W/"…"`, when compressed): give it in ' +
      "`If-None-Match` for a 304 while it is current",
    schema: { type: "string" as const },
  },
};

/** The `If-None-Match` request header of a GET that may answer 304. */
export const IfNoneMatchHeader = z.object({
  "if-none-match": z.string().optional().openapi({
    description: "ETags the client holds: 304 without a body when one of them is current",
  }),
});

/** The 304 of a GET given `If-None-Match`. */
export const NOT_MODIFIED = {
  304: {
    description: "Not modified: the ETag named in `If-None-Match` is current",
    headers: ETAG_HEADER,
  },
};

/** Path parameter `{table_name}`. */
export const TableParams = z.object({ table_name: z.string() });

/** A `schema` query parameter; empty means absent. */
export const SchemaQuery = z.string().optional().openapi({
  description: "Schema name",
  example: "public",
});

/**
 * A boolean query parameter: `true`/`false` in any case, or `1`/`0`; anything else is 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseBoolean } from "./shapes.ts";
 *
 * assert.equal(parseBoolean("if_not_exists", "False"), false);
 * assert.equal(parseBoolean("if_not_exists", undefined), false);
 * assert.throws(() => parseBoolean("if_not_exists", "yes"), /true or false/);
 * ```
 */
export function parseBoolean(name: string, value: string | undefined): boolean {
  if (value === undefined || value === "") return false;
  const lower = value.toLowerCase();
  if (lower === "true" || lower === "1") return true;
  if (lower === "false" || lower === "0") return false;
  throw ApiError.badRequest(`Query parameter ${name} must be true or false, not "${value}"`);
}

/**
 * An enumerated query parameter, in any case; absent or empty is `fallback`, anything not
 * `allowed` is 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseChoice } from "./shapes.ts";
 *
 * assert.equal(parseChoice("if_exists", "REPLACE", ["fail", "replace"], "fail"), "replace");
 * assert.equal(parseChoice("if_exists", undefined, ["fail", "replace"], "fail"), "fail");
 * assert.throws(() => parseChoice("if_exists", "random", ["fail", "replace"], "fail"));
 * ```
 */
export function parseChoice<T extends string>(
  name: string,
  value: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined || value === "") return fallback;
  const lower = value.toLowerCase() as T;
  if (!allowed.includes(lower)) {
    throw ApiError.badRequest(
      `Query parameter ${name} must be one of ${allowed.join(", ")}, not "${value}"`,
    );
  }
  return lower;
}

/**
 * A non-negative integer query parameter within `max`; anything else is 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCount } from "./shapes.ts";
 *
 * assert.equal(parseCount("limit", "25", 100, 1000), 25);
 * assert.equal(parseCount("limit", undefined, 100, 1000), 100);
 * assert.throws(() => parseCount("limit", "-1", 100, 1000));
 * ```
 */
export function parseCount(
  name: string,
  value: string | undefined,
  fallback: number,
  max: number,
): number {
  if (value === undefined || value === "") return fallback;
  if (!/^\d{1,16}$/.test(value) || Number(value) > max) {
    throw ApiError.badRequest(
      `Query parameter ${name} must be an integer from 0 to ${max}, not "${value}"`,
    );
  }
  return Number(value);
}

/** A boolean query parameter for route definitions. */
export const BooleanQuery = z.string().optional().openapi({
  type: "boolean",
  description: "true/false in any case, or 1/0",
});

/** A count query parameter for route definitions. */
export const CountQuery = z.string().optional().openapi({ type: "integer", minimum: 0 });

/**
 * The reserved parameters of a records read besides `schema`, `offset` and `limit`; every other
 * parameter is a filter on a column (`age=gte.18`), which no fixed shape can list.
 */
export const ReadQueryShape = {
  select: z.string().optional().openapi({
    description: 'The columns to return, in this order: `id,name,"Unit Price"` (default all)',
    example: "id,name",
  }),
  order: z.string().optional().openapi({
    description: "Sort keys: `column[.asc|.desc][.nullsfirst|.nullslast]`, comma-separated " +
      "(default the primary key, else insertion order)",
    example: "age.desc.nullslast,id",
  }),
  after: z.string().optional().openapi({
    description: "The `next` cursor of the previous page; empty to start a walk by cursor. " +
      "Not with `offset`",
  }),
  count: z.string().optional().openapi({
    enum: ["exact", "estimated", "none"],
    description: "`exact` (default) answers `total`, the rows the filters let through; " +
      "`estimated` answers it from the engine's statistics (counted when at most 10,000) with " +
      "`estimated` saying which; `none` leaves it out and does not count",
  }),
};

/** The figures of one column in a summary. */
const ColumnSummaryShape = z.object({
  name: z.string(),
  type: z.string(),
  count: z.number().int().openapi({ description: "Values that are not null" }),
  nulls: z.number().int(),
  approx_distinct: z.number().int().openapi({ description: "Estimated distinct values" }),
  min: z.unknown().openapi({ description: "Least value, as records show it; null for none" }),
  max: z.unknown().openapi({ description: "Greatest value, as records show it; null for none" }),
  avg: z.number().nullable().openapi({ description: "Mean, for numeric columns" }),
  std: z.number().nullable().openapi({ description: "Sample standard deviation, for numbers" }),
  q25: z.number().nullable().openapi({ description: "Approximate first quartile, for numbers" }),
  q50: z.number().nullable().openapi({ description: "Approximate median, for numbers" }),
  q75: z.number().nullable().openapi({ description: "Approximate third quartile, for numbers" }),
  histogram: z.array(z.object({
    from: z.union([z.number(), z.string()]),
    to: z.union([z.number(), z.string()]),
    count: z.number().int(),
  })).nullable().optional().openapi({
    description: "With `bins`: equal-width bins from the least value to the greatest, each " +
      "`from ≤ v < to`, the last `from ≤ v ≤ to`; null for a column not a number, date or " +
      "timestamp",
  }),
  top: z.array(z.object({ value: z.unknown(), count: z.number().int() })).nullable().optional()
    .openapi({
      description: "With `top`: the most frequent values, most frequent first; null for a " +
        "column not text, boolean or UUID",
    }),
});

/** The answer of a table summary. */
export const SummaryShape = z.object({
  table: z.string(),
  rows: z.number().int().openapi({ description: "Rows the filters let through" }),
  columns: z.array(ColumnSummaryShape),
}).openapi({
  example: {
    table: "people",
    rows: 3,
    columns: [{
      name: "age",
      type: "SMALLINT",
      count: 2,
      nulls: 1,
      approx_distinct: 2,
      min: 36,
      max: 85,
      avg: 60.5,
      std: 34.648232278140824,
      q25: 36,
      q50: 36,
      q75: 85,
    }],
  },
});

/**
 * The free-form filter parameters (`<column>=[not.]<op>.<value>`) of a route, for the document
 * only: any query parameter not otherwise named filters on the column it names, which no fixed
 * shape can list and the router must not validate (a column may be named like anything).
 * OpenAPI describes such parameters as one exploded object.
 */
export function filtersParameter(description: string, example: Record<string, string>) {
  return {
    name: "filters",
    in: "query" as const,
    required: false,
    style: "form" as const,
    explode: true,
    description,
    schema: { type: "object" as const, additionalProperties: { type: "string" as const } },
    example,
  };
}
