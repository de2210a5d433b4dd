/**
 * The HTTP application: middleware, routes, and the one place errors become responses.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { etag, RETAINED_304_HEADERS } from "hono/etag";
import { HTTPException } from "hono/http-exception";
import type { TokenVerifier } from "../auth/jwt.ts";
import { compression, wholeAnswers } from "./body_length.ts";
import { CORS_ANSWER_HEADERS, corsFor } from "./cors.ts";
import type { MetricsAccess } from "../config.ts";
import { bearerAuth } from "./auth.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { type Env, Metrics, observeRequests } from "./observe.ts";
import type { Registry } from "prom-client";
import { bufferedBody } from "./routes/body.ts";
import { docsRoutes } from "./routes/docs.ts";
import { idempotency, IdempotencyKey } from "./routes/idempotency.ts";
import { schemaRoutes } from "./routes/schemas.ts";
import { ETAG_HEADER, IfNoneMatchHeader, NOT_MODIFIED } from "./routes/shapes.ts";
import { serviceRoutes } from "./routes/service.ts";
import { recordChangeRoutes } from "./routes/record_changes.ts";
import { rowRoutes } from "./routes/rows.ts";
import { readSlots } from "./read_slots.ts";
import { exportRoutes } from "./routes/exports.ts";
import { downloadRoutes } from "./routes/downloads.ts";
import { tableRoutes } from "./routes/tables.ts";
import { templateRoutes } from "./routes/templates.ts";
import { UI_PATH, uiRoutes } from "./ui/mod.ts";
import { queryRoutes } from "./routes/query.ts";
import { backupRoutes } from "./routes/backups.ts";
import type { Backups } from "../service/backups.ts";
import type { Store } from "../store/store.ts";

/** Every API path starts with this. */
export const API_PREFIX = "/api/v1";
/** The OpenAPI document: served, linked from /docs, and described in itself. */
const OPENAPI_PATH = `${API_PREFIX}/openapi.json`;

/** What the application needs; it opens nothing itself. */
export interface AppDeps {
  readonly store: Store;
  /** Metrics kept outside the app (the PostgreSQL listener's), shown at `/metrics` too. */
  readonly metricsRegistries?: readonly Registry[];
  readonly verifier: TokenVerifier;
  readonly logger: Logger;
  readonly maxJsonBytes: number;
  readonly maxUploadBytes: number;
  readonly maxSheetRows: number;
  readonly maxSheetBytes: number;
  /** Longest wait for the next bytes of a streamed body (408 past it). */
  readonly bodyIdleMs: number;
  /** Where request bodies of rows are streamed to. */
  readonly spoolDir: string;
  /** Who may read `/metrics`. */
  readonly metricsAccess: MetricsAccess;
  /** Origins whose pages may call the service (CORS); none turns CORS off. */
  readonly corsOrigins: readonly string[];
  /** A client's query is interrupted this long after it began (408). */
  readonly queryTimeoutMs: number;
  /** Queries one token may have under way at once (429 beyond; 4). */
  readonly readsPerToken?: number;
  /** The backups, when the engine takes them (DuckDB); their routes answer 501 without. */
  readonly backups?: Backups;
  /** The clock idempotency keys expire by, in ms since the epoch; tests move it. */
  readonly now?: () => number;
}

/** Queries one token may have under way when `AppDeps.readsPerToken` is not given. */
const DEFAULT_READS_PER_TOKEN = 4;

/** Builds the application. */
export function createApp(deps: AppDeps): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ strict: false });

  // Outermost, so the request log and metrics see the answer as it is sent: its status (a
  // 304 included) and its bytes, compressed or not, counted as the client takes them.
  const metrics = new Metrics(deps.metricsRegistries);
  app.use("*", observeRequests(deps.logger, metrics));
  // A GET whose If-None-Match names the current tag is 304. Outside the compression, so the
  // 304 has the ETag (weak when compressed) and Vary the 200 would have, and the CORS headers
  // it keeps. A table's tag is its definition's, set by its route; the document's a hash.
  const notModified = etag({ retainedHeaders: [...RETAINED_304_HEADERS, ...CORS_ANSWER_HEADERS] });
  app.use(`${API_PREFIX}/table/:table_name`, notModified);
  app.use(OPENAPI_PATH, notModified);
  // Text, JSON and NDJSON of 1 KiB or more compressed: a streamed export as it is read, an
  // answer given whole in one step; a compressed answer's ETag weak.
  app.use("*", compression());
  app.use("*", wholeAnswers());
  // Before every token check: a preflight carries no token.
  if (deps.corsOrigins.length > 0) app.use("*", corsFor(deps.corsOrigins));

  const auth = bearerAuth(deps.verifier);
  app.route(
    "/",
    serviceRoutes({
      store: deps.store,
      metrics,
      metricsAccess: deps.metricsAccess,
      auth,
    }),
  );
  app.route("/", docsRoutes(OPENAPI_PATH));
  // The web UI's files are public, like the documentation: its data calls carry the token.
  app.route("/", uiRoutes());
  // A person who opens the service's address lands on the UI. Middleware rather than a route:
  // a redirect is no operation of the API's document.
  app.use("/", async function redirectToUi(c, next) {
    if (c.req.path !== "/") return await next();
    return c.redirect(UI_PATH, 302);
  });

  // Public, like the documentation it feeds, and registered before the token check so that
  // check never runs for it. The document is built from the routes' own schemas on each call;
  // its ETag is a hash of it, so a client holding the current one gets a 304.
  app.get(OPENAPI_PATH, (c) => {
    const document = app.getOpenAPI31Document({
      openapi: "3.1.0",
      info: {
        title: "Table service",
        version: "1",
        description: "Define tables, load rows from JSON, CSV and spreadsheets, evolve " +
          "definitions, and keep versioned table templates.",
      },
      // Relative: behind a proxy the browser's origin, not the one the service sees, is right.
      servers: [{ url: "/" }],
      security: [{ bearer: [] }],
    });
    const tag = createHash("sha256").update(JSON.stringify(document)).digest("base64url");
    return c.json(document, 200, { etag: `"${tag}"` });
  });
  app.openAPIRegistry.registerParameter("IdempotencyKey", IdempotencyKey);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
  });
  app.openAPIRegistry.registerPath({
    method: "get",
    operationId: "getOpenApiDocument",
    path: OPENAPI_PATH,
    summary: "This document: OpenAPI 3.1, built from the schemas that validate requests",
    tags: ["service"],
    security: [],
    request: { headers: IfNoneMatchHeader },
    responses: {
      200: {
        description: "The OpenAPI document",
        headers: ETAG_HEADER,
        content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
      },
      ...NOT_MODIFIED,
    },
  });

  // A download ticket is its own credential: its link is followed without a token.
  app.route(API_PREFIX, downloadRoutes(deps));
  app.use(`${API_PREFIX}/*`, auth);
  // Both leave their work for the route's own middleware (scoped()): the body is read, then
  // fingerprinted for a keyed write, only once a route matched and its scope check passed.
  app.use(`${API_PREFIX}/*`, bufferedBody(deps));
  app.use(`${API_PREFIX}/*`, idempotency(deps));
  app.use(`${API_PREFIX}/query`, readSlots(deps.readsPerToken ?? DEFAULT_READS_PER_TOKEN));
  app.route(API_PREFIX, tableRoutes(deps.store));
  app.route(API_PREFIX, rowRoutes(deps));
  app.route(API_PREFIX, exportRoutes(deps));
  app.route(API_PREFIX, recordChangeRoutes(deps));
  app.route(API_PREFIX, schemaRoutes(deps.store));
  app.route(API_PREFIX, templateRoutes(deps.store));
  app.route(API_PREFIX, queryRoutes(deps));
  app.route(API_PREFIX, backupRoutes(deps.backups));

  // Answered, not thrown: where no route matches but the `*` middleware, Hono calls this
  // from that middleware's `next()`, and a throw would skip the request's log line.
  // Built at the first request no route takes, when every route is in place.
  let routes: RoutePattern[] | undefined;
  app.notFound((c) => {
    const allowed = allowedMethods(routes ??= routePatterns(app.routes), c.req.path);
    return (allowed.length > 0
      ? ApiError.methodNotAllowed(c.req.method, c.req.path, allowed)
      : ApiError.notFound(`No route for ${c.req.method} "${c.req.path}"`)).toResponse();
  });

  app.onError((error, c) => errorResponse(error, c, deps.logger));
  return app;
}

function errorResponse(error: unknown, c: Context<Env>, logger: Logger): Response {
  if (error instanceof ApiError) return error.toResponse();
  // A full disk wherever it was met: the spool, a file the service writes, the database.
  const fullDisk = ApiError.fromFullDisk(error);
  if (fullDisk) return fullDisk.toResponse();
  if (error instanceof HTTPException) {
    if (error.status === 400) {
      return ApiError.badRequest("The request body is not valid JSON").toResponse();
    }
    if (error.status === 415) {
      return ApiError.unsupportedMediaType("The request body must be application/json")
        .toResponse();
    }
  }
  const requestId = c.get("requestId") ?? "unknown";
  logger.log("error", "unexpected failure", {
    request_id: requestId,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    stack: error instanceof Error ? error.stack : undefined,
  });
  return ApiError.internal(requestId).toResponse();
}

/** A route's method and the paths it takes. */
interface RoutePattern {
  readonly method: string;
  readonly path: RegExp;
}

/** The patterns of `routes` with a method and a path of their own (no `ALL`, no wildcard). */
function routePatterns(routes: readonly { method: string; path: string }[]): RoutePattern[] {
  return routes.filter((route) => route.method !== "ALL" && !route.path.includes("*")).map(
    (route) => {
      const pattern = route.path.replace(/\/+$/, "").split("/").map((part) =>
        part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      ).join("/");
      return { method: route.method, path: new RegExp(`^${pattern}/?$`) };
    },
  );
}

/** The methods some route accepts on `path`, for a 405's `Allow` header. */
function allowedMethods(routes: readonly RoutePattern[], path: string): string[] {
  const methods = new Set(routes.filter((r) => r.path.test(path)).map((r) => r.method));
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}
