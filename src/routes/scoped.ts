/**
 * Routes that need a scope: one place that both enforces the scope and documents it.
 *
 * @module
 */

import type { RouteConfig } from "@hono/zod-openapi";
import { requireScope } from "../auth/middleware.ts";
import type { Scope } from "../auth/jwt.ts";
import { afterScope } from "./idempotency.ts";

/**
 * `route` with the check for `scope` as its middleware (then a keyed write's retry check,
 * which must not answer a token without the scope), and the scope stated in the OpenAPI
 * document twice: as the operation's security requirement, for tools, and as the first line
 * of its description, which is what the docs page shows a reader.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createRoute, z } from "@hono/zod-openapi";
 * import { scoped } from "./scoped.ts";
 *
 * const route = createRoute(scoped("tables:read", {
 *   method: "get",
 *   path: "/table",
 *   operationId: "listTables",
 *   responses: { 200: { description: "Tables" } },
 * }));
 * assert.deepEqual(route.security, [{ bearer: ["tables:read"] }]);
 * assert.match(route.description, /^Needs the `tables:read` scope/);
 * assert.equal(route.middleware.length, 2);
 * ```
 */
export function scoped<
  P extends string,
  R extends Omit<RouteConfig, "path" | "middleware" | "security"> & { path: P },
>(scope: Scope, route: R) {
  // hasScope() lets a write scope stand for the read scope of the same resource.
  const implied = scope.endsWith(":read") ? ` (or \`${scope.replace(":read", ":write")}\`)` : "";
  const needs = `Needs the \`${scope}\` scope${implied}.`;
  return {
    ...route,
    description: route.description === undefined ? needs : `${needs}\n\n${route.description}`,
    security: [{ bearer: [scope] }],
    middleware: [requireScope(scope), afterScope],
  };
}
