/**
 * Routes about the service itself, outside `/api/v1`: liveness and readiness (public), and
 * metrics (public or behind a token, as configured).
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { MetricsAccess } from "../../config.ts";
import type { Metrics } from "../observe.ts";
import * as health from "../../service/health.ts";
import type { Store } from "../../store/store.ts";
import { ErrorShape } from "./shapes.ts";

const healthz = createRoute({
  method: "get",
  operationId: "checkLiveness",
  path: "/healthz",
  summary: "Liveness: the process answers and its database engine works or can be reopened",
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
    503: {
      description: "The database engine failed and cannot be reopened: restart the service",
      content: { "application/json": { schema: ErrorShape } },
    },
  },
});

const readyz = createRoute({
  method: "get",
  operationId: "checkReadiness",
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

function metricsRoute(access: MetricsAccess, auth: MiddlewareHandler) {
  return createRoute({
    method: "get",
    operationId: "getMetrics",
    path: "/metrics",
    summary: access === "public"
      ? "Counters in the Prometheus text format (public: METRICS_ACCESS=public)"
      : "Counters in the Prometheus text format (any valid token: METRICS_ACCESS=token)",
    tags: ["service"],
    ...(access === "public" ? { security: [] } : { middleware: [auth] as const }),
    responses: {
      200: {
        description: "Requests by route and status, latency histogram, rows loaded, bytes " +
          "uploaded, open transactions",
        content: {
          "text/plain; version=0.0.4": {
            schema: z.string().openapi({
              example: "# TYPE table_service_open_transactions gauge\n" +
                "table_service_open_transactions 0\n",
            }),
          },
        },
      },
      ...(access === "public" ? {} : {
        401: {
          description: "No valid bearer token",
          content: { "application/json": { schema: ErrorShape } },
        },
      }),
    },
  });
}

/** What the service routes need. */
export interface ServiceDeps {
  readonly store: Store;
  readonly metrics: Metrics;
  readonly metricsAccess: MetricsAccess;
  /** The token check, for metrics that are not public. */
  readonly auth: MiddlewareHandler;
}

/** The health and metrics routes. */
export function serviceRoutes({ store, metrics, metricsAccess, auth }: ServiceDeps): OpenAPIHono {
  const app = new OpenAPIHono({ strict: false });
  app.openapi(healthz, async (c) => {
    await health.checkLiveness(store);
    return c.json({ status: "ok" as const }, 200);
  });
  app.openapi(readyz, async (c) => {
    await health.checkReadiness(store);
    return c.json({ status: "ready" as const }, 200);
  });
  app.openapi(metricsRoute(metricsAccess, auth), async (c) => {
    const text = await metrics.render(await health.storageGauges(store));
    return c.text(text, 200, { "content-type": metrics.contentType });
  });
  return app;
}
