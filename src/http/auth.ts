/**
 * Authentication and authorization middleware.
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { nameKey } from "../catalog/names.ts";
import { ApiError } from "../errors.ts";
import { hasScope, type Principal, type Scope, type TokenVerifier } from "../auth/jwt.ts";

/** Variables the auth middleware sets on the request context. */
export interface AuthVariables {
  principal: Principal;
}

/**
 * Middleware that requires a valid bearer token and stores its {@link Principal}.
 */
export function bearerAuth(
  verifier: TokenVerifier,
): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async function bearerAuth(c, next) {
    const header = c.req.header("authorization");
    if (header === undefined) throw ApiError.unauthorized("Missing Authorization header");
    const match = /^Bearer +([A-Za-z0-9_\-.=+/]+)$/i.exec(header.trim());
    if (!match) {
      throw ApiError.unauthorized('The Authorization header must be "Bearer <token>"');
    }
    c.set("principal", await verifier.verify(match[1]!));
    await next();
  };
}

/** Middleware that requires `scope` of the authenticated principal (403 without it). */
export function requireScope(scope: Scope): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async function requireScope(c, next) {
    if (!hasScope(c.get("principal"), scope)) {
      throw ApiError.forbidden(`This operation needs the "${scope}" scope`);
    }
    await next();
  };
}

/** Throws 403 when the token's `schemas` claim does not include `schema`. */
export function checkSchemaAccess(c: Context<{ Variables: AuthVariables }>, schema: string): void {
  const allowed = c.get("principal").schemas;
  if (allowed && !allowed.includes(nameKey(schema))) {
    throw ApiError.forbidden(`The token does not grant access to schema "${schema}"`);
  }
}

/** Throws 403 when the token is confined to some schemas: the operation reaches every one. */
export function checkWholeDatabase(
  c: Context<{ Variables: AuthVariables }>,
  because: string,
): void {
  if (c.get("principal").schemas) {
    throw ApiError.forbidden(`This needs a token without a "schemas" claim: ${because}`);
  }
}
