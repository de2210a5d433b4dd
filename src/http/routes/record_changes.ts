/**
 * Routes that change records by filter: `PATCH` sets columns of the rows the filters choose,
 * `DELETE` removes them. The filters are the records read's (`<column>=[not.]<op>.<value>`).
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AuthVariables } from "../auth.ts";
import * as changes from "../../service/record_changes.ts";
import type { Store } from "../../store/store.ts";
import {
  IdempotencyKeyHeader,
  type IdempotencyVariables,
  keyedWrite,
  respond,
} from "./idempotency.ts";
import { scoped } from "./scoped.ts";
import {
  BooleanQuery,
  errorResponses,
  filtersParameter,
  SchemaQuery,
  TableParams,
} from "./shapes.ts";
import { validationHook } from "./validation.ts";
import { address } from "./rows.ts";

type Env = { Variables: AuthVariables & IdempotencyVariables };

/** The query of a change: the schema, `all`, and the filters (documented as one object). */
const ChangeQuery = z.object({
  schema: SchemaQuery,
  all: BooleanQuery.openapi({
    type: "boolean",
    description: "`true` lets the change apply to every row when no filter is given; " +
      "without a filter and without it the request is 400",
  }),
});

/** The filters choosing the rows, for the document only (see {@link filtersParameter}). */
const FILTERS_PARAMETER = filtersParameter(
  "Filters choosing the rows, all ANDed, as in the records read: " +
    "`<column>=[not.]<op>.<value>` with `eq`, `neq`, `gt`, `gte`, `lt`, `lte`, `like`, " +
    "`ilike` (`*` for `%`), `in.(a,b)`, `is.null`, `is.true`, `is.false`. At least one is " +
    "needed unless `all=true`; `select`, `order`, `after`, `count`, `offset` and `limit` are 400.",
  { id: "eq.3" },
);

const updateRecords = createRoute(scoped("tables:write", {
  method: "patch",
  operationId: "updateRecords",
  path: "/table/{table_name}/records",
  summary: "Set columns of the records the filters choose",
  description: "One transaction. Values are cast as inserted values are; `null` sets NULL " +
    "(a column's default cannot be asked for). A primary-key or unique column of a row another " +
    "table's foreign key references cannot be changed, even to its own value (409).",
  tags: ["rows"],
  parameters: [FILTERS_PARAMETER],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: ChangeQuery,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.record(z.string(), z.unknown()).openapi({
            description: "The columns to set and their values; at least one",
          }),
          example: { status: "shipped", shipped_at: "2026-01-02T03:04:05Z" },
        },
      },
    },
  },
  responses: {
    200: {
      description: "How many records the filters chose, each now changed",
      content: {
        "application/json": {
          schema: z.object({ updated: z.number().int() }),
          example: { updated: 2 },
        },
      },
    },
    ...errorResponses(404, 409, 415, 422),
  },
}));

const deleteRecords = createRoute(scoped("tables:write", {
  method: "delete",
  operationId: "deleteRecords",
  path: "/table/{table_name}/records",
  summary: "Delete the records the filters choose",
  description: "One transaction. A row another table's foreign key references cannot be " +
    "deleted (409): nothing is.",
  tags: ["rows"],
  parameters: [FILTERS_PARAMETER],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: ChangeQuery,
  },
  responses: {
    200: {
      description: "How many records were deleted",
      content: {
        "application/json": {
          schema: z.object({ deleted: z.number().int() }),
          example: { deleted: 2 },
        },
      },
    },
    ...errorResponses(404, 409),
  },
}));

/** The routes that change records by filter, over `deps.store`. */
export function recordChangeRoutes(deps: { readonly store: Store }): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });

  app.openapi(updateRecords, async (c) => {
    const ref = address(c);
    // Validated as an object by the route; read again as text so that each value keeps the
    // digits the client sent.
    const body = await c.req.text();
    const answer = ({ updated }: { updated: number }) => ({ status: 200, body: { updated } });
    const result = await changes.updateRecords(
      deps,
      ref,
      queryOf(c),
      body,
      keyedWrite(c, answer),
    );
    return respond(c, answer(result)) as never;
  });

  app.openapi(deleteRecords, async (c) => {
    const ref = address(c);
    const answer = ({ deleted }: { deleted: number }) => ({ status: 200, body: { deleted } });
    const result = await changes.deleteRecords(deps, ref, queryOf(c), keyedWrite(c, answer));
    return respond(c, answer(result)) as never;
  });

  return app;
}

/** The request's query parameters, in order, repeats kept. */
function queryOf(c: Context<Env>): URLSearchParams {
  return new URL(c.req.url).searchParams;
}
