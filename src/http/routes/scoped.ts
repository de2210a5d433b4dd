/**
 * Routes that need a scope: one place that both enforces the scope and documents it.
 *
 * @module
 */

import type { RouteConfig } from "@hono/zod-openapi";
import { requireScope } from "../auth.ts";
import type { Scope } from "../../auth/jwt.ts";
import { afterScope } from "./idempotency.ts";
import { failureResponse } from "./shapes.ts";

/**
 * `route` with the check for `scope` as its middleware (then the read of a buffered body and
 * a keyed write's retry check, which must not answer a token without the scope), and the
 * scope stated in the OpenAPI document twice: as the operation's security requirement, for
 * tools, and as the first line of its description, which is what the docs page shows a
 * reader. The answers of what runs after the scope check are documented with the route's
 * own: 408 and 413 for a body, 409 and `Idempotent-Replayed` for an `Idempotency-Key`.
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
    responses: withAfterScopeResponses(route) as R["responses"],
  };
}

/** The answers of what `afterScope` runs, added to a route's own. */
function withAfterScopeResponses(route: Omit<RouteConfig, "path">): RouteConfig["responses"] {
  const responses = { ...route.responses };
  // afterScope reads a buffered body; a streamed one its route reads under the same rules.
  if (route.request?.body !== undefined) {
    responses[408] ??= failureResponse(408);
    responses[413] ??= failureResponse(413);
  }
  const headers = route.request?.headers;
  const keyed = headers !== undefined && !Array.isArray(headers) && "shape" in headers &&
    "idempotency-key" in (headers.shape as object);
  if (keyed) {
    responses[400] ??= failureResponse(400);
    const conflict = responses[409];
    responses[409] = failureResponse(
      409,
      `${
        conflict && "description" in conflict ? conflict.description : "Conflict"
      }; or the \`Idempotency-Key\` was used for ` +
        "another request (`idempotency_key_reused`) or its first request is still running " +
        "(`idempotency_key_in_use`)",
    );
    const success = responses[200];
    if (success !== undefined && !("$ref" in success)) {
      responses[200] = {
        ...success,
        headers: {
          ...success.headers as object,
          "Idempotent-Replayed": {
            description: "`true` when the answer is the one kept for the `Idempotency-Key`, " +
              "given again: the write was not carried out again",
            schema: { type: "string", enum: ["true"] },
          },
        },
      };
    }
  }
  return responses;
}
