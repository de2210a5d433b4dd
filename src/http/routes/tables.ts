/**
 * Routes of the table resource: create, get, list, update, delete.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type AuthVariables, checkSchemaAccess } from "../auth.ts";
import { checkSchemaName, checkTableName, DEFAULT_SCHEMA } from "../../catalog/names.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import * as tables from "../../service/tables.ts";
import type { Store } from "../../store/store.ts";
import {
  BooleanQuery,
  CountQuery,
  errorResponses,
  ETAG_HEADER,
  IfNoneMatchHeader,
  NOT_MODIFIED,
  parseBoolean,
  parseCount,
  SchemaQuery,
  TableDefinitionShape,
  TableParams,
  TableResponseShape,
  TableShape,
  TableUpdateShape,
} from "./shapes.ts";
import { templateUse, TemplateUseQuery } from "./templates.ts";
import { scoped } from "./scoped.ts";
import { validationHook } from "./validation.ts";
import { IdempotencyKeyHeader, type IdempotencyVariables, keyedWrite } from "./idempotency.ts";

/**
 * The entity tag of a table's definition as the API shows it: GET, POST and PUT send it as
 * `ETag`, and a PUT with `If-Match` applies only to the definition it names.
 */
function etagOf(table: Table): string {
  return `"${createHash("sha256").update(JSON.stringify(table)).digest("base64url").slice(0, 27)}"`;
}

/**
 * Throws 409 unless `ifMatch` (an `If-Match` header, absent for none) names the current
 * definition's tag or is `*`. 409 rather than HTTP's 412: clients of the contract read any
 * status it does not list as an internal error.
 */
function checkIfMatch(ifMatch: string | undefined, current: Table): void {
  if (ifMatch === undefined) return;
  // A compressed answer carries the tag made weak (`W/"…"`). It still names this definition,
  // which is what the tag stands for, whatever the encoding of the bytes it came with.
  const tags = ifMatch.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
  const tag = etagOf(current);
  if (tags.includes("*") || tags.includes(tag)) return;
  throw new ApiError(
    409,
    "edit_conflict",
    `Table "${current.schema}.${current.name}" changed since it was read: If-Match ${ifMatch} ` +
      `is not its current tag ${tag}; read it again and redo the change`,
  );
}

/** Largest page of a table listing. */
export const MAX_TABLE_PAGE = 1000;

type Env = { Variables: AuthVariables & IdempotencyVariables };

const createTable = createRoute(scoped("tables:write", {
  method: "post",
  operationId: "createTable",
  path: "/table/{table_name}",
  summary: "Create a table, empty or from a definition",
  tags: ["tables"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: z.object({ schema: SchemaQuery, if_not_exists: BooleanQuery, ...TemplateUseQuery }),
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({ table: TableDefinitionShape.nullish() }),
          example: {
            table: {
              columns: [
                { name: "id", type: "bigserial" },
                { name: "email", type: "varchar", is_nullable: false },
              ],
              constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["email"] }] },
            },
          },
        },
      },
    },
  },
  responses: {
    200: {
      description: "The table",
      content: { "application/json": { schema: TableResponseShape } },
    },
    ...errorResponses(404, 409, 413, 415, 422),
  },
}));

const getTable = createRoute(scoped("tables:read", {
  method: "get",
  operationId: "getTable",
  path: "/table/{table_name}",
  summary: "Get a table's definition",
  tags: ["tables"],
  request: {
    params: TableParams,
    query: z.object({ schema: SchemaQuery }),
    headers: IfNoneMatchHeader,
  },
  responses: {
    200: {
      description: "The table",
      headers: ETAG_HEADER,
      content: { "application/json": { schema: TableResponseShape } },
    },
    ...NOT_MODIFIED,
    ...errorResponses(404),
  },
}));

const listTables = createRoute(scoped("tables:read", {
  method: "get",
  operationId: "listTables",
  path: "/table",
  summary: "List tables",
  tags: ["tables"],
  request: {
    query: z.object({
      schema: SchemaQuery,
      verbose: BooleanQuery,
      offset: CountQuery,
      limit: CountQuery,
    }),
  },
  responses: {
    200: {
      description: "A page of tables, with the number of all matches",
      content: {
        "application/json": {
          schema: z.object({
            tables: z.array(
              z.union([TableShape, z.object({ name: z.string(), schema: z.string() })])
                .and(z.object({
                  rows_estimate: z.number().int().openapi({
                    description: "The table's rows as the engine's statistics estimate them, " +
                      "not counted (`count=exact` on its records counts them)",
                  }),
                })),
            ),
            total: z.number().int(),
          }),
        },
      },
    },
    ...errorResponses(404),
  },
}));

const updateTable = createRoute(scoped("tables:write", {
  method: "put",
  operationId: "updateTable",
  path: "/table/{table_name}",
  summary: "Update a table to the wanted definition",
  description: "Renames or moves the table, and renames, retypes, adds, drops and reorders " +
    "columns and replaces constraints, in one transaction that keeps every row and every " +
    "surviving column id. Sending a GET response back unchanged changes nothing.",
  tags: ["tables"],
  request: {
    params: TableParams,
    query: z.object({
      schema: SchemaQuery,
      dry_run: BooleanQuery.openapi({
        type: "boolean",
        description: "Carry the update out and roll it back: the answer is the table as it " +
          "would be, the list of changes and the rows that would not fit; nothing changes",
      }),
    }),
    headers: IdempotencyKeyHeader.extend({
      "if-match": z.string().optional().openapi({
        description: "The ETag of a GET: the update applies only if the table is unchanged " +
          "since (409 edit_conflict otherwise)",
      }),
    }),
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({ table: TableUpdateShape }),
          example: {
            table: {
              name: "customers",
              columns: [
                { id: 1, name: "id", type: "BIGINT", is_nullable: false },
                { id: 2, name: "email", type: "VARCHAR", is_nullable: false },
                { name: "country", type: "VARCHAR", default: "'NL'" },
              ],
            },
          },
        },
      },
    },
  },
  responses: {
    200: {
      description: "The table after the update, new columns with their new ids; with " +
        "`dry_run=true` what the update would do",
      content: {
        "application/json": {
          schema: z.union([
            TableResponseShape,
            z.object({
              dry_run: z.literal(true),
              table: TableShape.nullable().openapi({
                description: "The table as the update would leave it; null when rows refuse it",
              }),
              changes: z.array(z.object({
                change: z.string().openapi({
                  description: "rename_table, move_table, add_column, drop_column, " +
                    "rename_column, retype_column, set_nullable, set_default, " +
                    "reorder_columns, set_primary_key, add_unique, drop_unique, " +
                    "add_foreign_key or drop_foreign_key",
                }),
                column: z.string().optional(),
                constraint: z.string().optional(),
                from: z.unknown().optional(),
                to: z.unknown().optional(),
              })),
              errors: z.array(z.record(z.string(), z.unknown())).openapi({
                description: "The rows that would not fit, as the update's 422 names them",
              }),
              message: z.string().optional(),
            }),
          ]),
        },
      },
    },
    ...errorResponses(404, 409, 413, 415, 422),
  },
}));

const deleteTable = createRoute(scoped("tables:write", {
  method: "delete",
  operationId: "deleteTable",
  path: "/table/{table_name}",
  summary: "Delete a table",
  tags: ["tables"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TableParams,
    query: z.object({ schema: SchemaQuery }),
  },
  responses: {
    200: {
      description: "The table is gone",
      content: {
        "application/json": {
          schema: z.object({ message: z.string(), table_name: z.string(), schema: z.string() }),
        },
      },
    },
    ...errorResponses(404, 409),
  },
}));

/** The answer of a write that gives a table: the table, its ETag in the header. */
function tableAnswer({ table }: { table: Table }) {
  return { status: 200, body: { table }, headers: { etag: etagOf(table) } };
}

/** The schema a request addresses: `schema` when given and valid, else `public`. */
export function schemaOf(value: string | undefined): string {
  return value === undefined || value === "" ? DEFAULT_SCHEMA : checkSchemaName(value);
}

/** Table routes over `store`. */
export function tableRoutes(store: Store): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });

  app.openapi(createTable, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const query = c.req.valid("query");
    const schema = schemaOf(query.schema);
    const ifNotExists = parseBoolean("if_not_exists", query.if_not_exists);
    checkSchemaAccess(c, schema);
    const created = await tables.createTable(store, { schema, name }, c.req.valid("json").table, {
      template: templateUse(c),
      ifNotExists,
      keyed: keyedWrite(c, tableAnswer),
    });
    const { body, headers } = tableAnswer(created);
    return c.json(body, 200, headers);
  });

  app.openapi(getTable, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const schema = schemaOf(c.req.valid("query").schema);
    checkSchemaAccess(c, schema);
    const table = await tables.getTable(store, { schema, name });
    return c.json({ table }, 200, { etag: etagOf(table) });
  });

  app.openapi(listTables, async (c) => {
    const query = c.req.valid("query");
    const schema = query.schema ? checkSchemaName(query.schema) : undefined;
    const verbose = parseBoolean("verbose", query.verbose);
    const offset = parseCount("offset", query.offset, 0, Number.MAX_SAFE_INTEGER);
    const limit = parseCount("limit", query.limit, 100, MAX_TABLE_PAGE);
    if (schema !== undefined) checkSchemaAccess(c, schema);
    const listing = await tables.listTables(store, {
      schema,
      visibleSchemas: c.get("principal").schemas,
      offset,
      limit,
      verbose,
    });
    return c.json({ tables: [...listing.tables], total: listing.total }, 200);
  });

  app.openapi(updateTable, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const schema = schemaOf(c.req.valid("query").schema);
    checkSchemaAccess(c, schema);
    const wanted = c.req.valid("json").table;
    if (wanted.schema != null) checkSchemaAccess(c, checkSchemaName(wanted.schema));
    const ifMatch = c.req.header("if-match");
    if (parseBoolean("dry_run", c.req.valid("query").dry_run)) {
      const preview = await tables.previewUpdate(store, { schema, name }, wanted, {
        expect: (current) => checkIfMatch(ifMatch, current),
      });
      return c.json(preview, 200) as never;
    }
    const updated = await tables.updateTable(store, { schema, name }, wanted, {
      expect: (current) => checkIfMatch(ifMatch, current),
      keyed: keyedWrite(c, tableAnswer),
    });
    const { body, headers } = tableAnswer(updated);
    return c.json(body, 200, headers);
  });

  app.openapi(deleteTable, async (c) => {
    const name = checkTableName(c.req.valid("param").table_name);
    const schema = schemaOf(c.req.valid("query").schema);
    checkSchemaAccess(c, schema);
    const answer = (dropped: TableRef) => ({
      status: 200,
      body: {
        message: `Table "${dropped.schema}.${dropped.name}" deleted`,
        table_name: dropped.name,
        schema: dropped.schema,
      },
    });
    const dropped = await tables.deleteTable(store, { schema, name }, keyedWrite(c, answer));
    return c.json(answer(dropped).body, 200);
  });

  return app;
}
