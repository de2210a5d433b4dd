/**
 * Turns a failed request validation into the contract's 400.
 *
 * @module
 */

import type { z } from "@hono/zod-openapi";
import { ApiError, type ErrorDetail } from "../../errors.ts";

/** Where a value was validated, as zod-openapi names it. */
type Target = "json" | "query" | "param" | "header" | "cookie" | "form";

const TARGET_NAMES: Record<Target, string> = {
  json: "request body",
  query: "query parameter",
  param: "path parameter",
  header: "header",
  cookie: "cookie",
  form: "form field",
};

/**
 * The zod-openapi hook every route uses: a failed validation throws a 400 whose details
 * name each field that is wrong.
 */
export function validationHook(
  result: { success: true } | { success: false; error: z.ZodError; target: Target },
): void {
  if (result.success) return;
  const details: ErrorDetail[] = result.error.issues.map((issue) => ({
    field: fieldPath(issue.path),
    message: issue.message,
  }));
  const first = details[0]!;
  const where = TARGET_NAMES[result.target];
  throw ApiError.badRequest(
    first.field
      ? `Invalid ${where} "${first.field}": ${first.message}`
      : `Invalid ${where}: ${first.message}`,
    details,
  );
}

/**
 * A zod issue path as a readable field path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fieldPath } from "./validation.ts";
 *
 * assert.equal(fieldPath(["table", "columns", 0, "name"]), "table.columns[0].name");
 * ```
 */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, key) =>
      typeof key === "number" ? `${text}[${key}]` : text ? `${text}.${String(key)}` : String(key),
    "",
  );
}
