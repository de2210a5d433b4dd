/**
 * Routes about the service itself, outside `/api/v1` and public: liveness and readiness.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { ApiError } from "../errors.ts";
import type { Store } from "../store/store.ts";
import { ErrorShape } from "./shapes.ts";

const healthz = createRoute({
  method: "get",
  path: "/healthz",
  summary: "Liveness: the process answers",
  tags: ["service"],
  security: [],
  responses: {
    200: {
      description: "The service is up",
      content: {
        "application/json": {
          schema: z.object({ status: z.literal("ok") }).openapi({ example: { status: "ok" } }),
        },
      },
    },
  },
});

const readyz = createRoute({
  method: "get",
  path: "/readyz",
  summary: "Readiness: the database is open and writable",
  tags: ["service"],
  security: [],
  responses: {
    200: {
      description: "The database is open and takes writes",
      content: {
        "application/json": {
          schema: z.object({ status: z.literal("ready") }).openapi({
            example: { status: "ready" },
          }),
        },
      },
    },
    503: {
      description: "The database is closed or refuses writes",
      content: { "application/json": { schema: ErrorShape } },
    },
  },
});

/** The health routes. */
export function serviceRoutes(store: Store): OpenAPIHono {
  const app = new OpenAPIHono();
  app.openapi(healthz, (c) => c.json({ status: "ok" as const }, 200));
  app.openapi(readyz, async (c) => {
    if (await store.ready()) return c.json({ status: "ready" as const }, 200);
    throw ApiError.unavailable("The database is not writable");
  });
  return app;
}
