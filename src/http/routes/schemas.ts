/**
 * Routes of the schema resource: list, create, delete.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type AuthVariables, checkSchemaAccess } from "../auth.ts";
import { checkSchemaName } from "../../catalog/names.ts";
import * as schemas from "../../service/schemas.ts";
import type { Store } from "../../store/store.ts";
import { BooleanQuery, errorResponses, parseBoolean } from "./shapes.ts";
import { scoped } from "./scoped.ts";
import { validationHook } from "./validation.ts";
import { IdempotencyKeyHeader, type IdempotencyVariables, keyedWrite } from "./idempotency.ts";

type Env = { Variables: AuthVariables & IdempotencyVariables };

const SchemaParams = z.object({ schema_name: z.string() });
const SchemaResult = z.object({ schema: z.string(), message: z.string() });

const listSchemas = createRoute(scoped("tables:read", {
  method: "get",
  operationId: "listSchemas",
  path: "/schema",
  summary: "List schemas",
  tags: ["schemas"],
  responses: {
    200: {
      description: "Every schema the token may see",
      content: {
        "application/json": {
          schema: z.object({ schemas: z.array(z.object({ name: z.string() })) }),
        },
      },
    },
    ...errorResponses(),
  },
}));

const createSchema = createRoute(scoped("tables:write", {
  method: "post",
  operationId: "createSchema",
  path: "/schema/{schema_name}",
  summary: "Create a schema",
  tags: ["schemas"],
  request: {
    headers: IdempotencyKeyHeader,
    params: SchemaParams,
  },
  responses: {
    200: { description: "Created", content: { "application/json": { schema: SchemaResult } } },
    ...errorResponses(409),
  },
}));

const deleteSchema = createRoute(scoped("tables:write", {
  method: "delete",
  operationId: "deleteSchema",
  path: "/schema/{schema_name}",
  summary: "Delete a schema",
  tags: ["schemas"],
  request: {
    headers: IdempotencyKeyHeader,
    params: SchemaParams,
    query: z.object({ cascade: BooleanQuery }),
  },
  responses: {
    200: { description: "Deleted", content: { "application/json": { schema: SchemaResult } } },
    ...errorResponses(404, 409),
  },
}));

/** Schema routes over `store`. */
export function schemaRoutes(store: Store): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });

  app.openapi(listSchemas, async (c) => {
    const names = await schemas.listSchemas(store, c.get("principal").schemas);
    return c.json({ schemas: names.map((name) => ({ name })) }, 200);
  });

  app.openapi(createSchema, async (c) => {
    const name = checkSchemaName(c.req.valid("param").schema_name);
    checkSchemaAccess(c, name);
    const answer = (schema: string) => ({
      status: 200,
      body: { schema, message: `Schema "${schema}" created` },
    });
    const schema = await schemas.createSchema(store, name, keyedWrite(c, answer));
    return c.json(answer(schema).body, 200);
  });

  app.openapi(deleteSchema, async (c) => {
    const name = checkSchemaName(c.req.valid("param").schema_name);
    const cascade = parseBoolean("cascade", c.req.valid("query").cascade);
    checkSchemaAccess(c, name);
    const answer = (schema: string) => ({
      status: 200,
      body: { schema, message: `Schema "${schema}" deleted` },
    });
    const schema = await schemas.dropSchema(store, name, cascade, keyedWrite(c, answer));
    return c.json(answer(schema).body, 200);
  });

  return app;
}
