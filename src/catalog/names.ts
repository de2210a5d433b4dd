/**
 * Naming rules for schemas, tables, columns, constraints and templates.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/** Longest schema, table, column or constraint name. */
export const MAX_NAME_LENGTH = 63;

/** The schema that exists from the first start and cannot be dropped. */
export const DEFAULT_SCHEMA = "public";

/**
 * Schema names the API never shows nor lets anyone address: the service's own metadata
 * schema and the storage engine's built-in ones.
 */
export const RESERVED_SCHEMAS: ReadonlySet<string> = new Set([
  "_table_service",
  // The database file is tables.duckdb, so DuckDB's catalog is "tables"; a schema of that
  // name would make every qualified name ambiguous.
  "tables",
  "main",
  "information_schema",
  "pg_catalog",
  "temp",
  "system",
]);

const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const TEMPLATE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,31}$/;
/** Control, format, surrogate, private-use and unassigned characters, and line separators. */
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]/u;

/**
 * Why a column or constraint name breaks the rule, or undefined when it is fine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { labelProblem } from "./names.ts";
 *
 * assert.equal(labelProblem("Unit Price"), undefined);
 * assert.equal(labelProblem(" price"), "has leading or trailing space");
 * ```
 */
export function labelProblem(name: string): string | undefined {
  const length = [...name].length;
  if (length === 0) return "is empty";
  if (length > MAX_NAME_LENGTH) return `is longer than ${MAX_NAME_LENGTH} characters`;
  if (UNPRINTABLE.test(name)) return "contains a control or invisible character";
  if (name.trim() !== name) return "has leading or trailing space";
  return undefined;
}

/**
 * Why a schema or table name breaks the rule, or undefined when it is fine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sqlNameProblem } from "./names.ts";
 *
 * assert.equal(sqlNameProblem("sales_2026"), undefined);
 * assert.match(sqlNameProblem("2026_sales")!, /letter or underscore/);
 * ```
 */
export function sqlNameProblem(name: string): string | undefined {
  if (name.length === 0) return "is empty";
  if (name.length > MAX_NAME_LENGTH) return `is longer than ${MAX_NAME_LENGTH} characters`;
  if (!SQL_NAME.test(name)) {
    return "must start with a letter or underscore and contain only letters, digits and underscores";
  }
  return undefined;
}

/**
 * Checks a schema name from a request: 400 when it breaks the rule or is reserved.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkSchemaName } from "./names.ts";
 *
 * assert.equal(checkSchemaName("sales"), "sales");
 * assert.throws(() => checkSchemaName("main"), /reserved/);
 * ```
 */
export function checkSchemaName(name: string): string {
  const problem = sqlNameProblem(name);
  if (problem) throw ApiError.invalidName(`Schema name "${printable(name)}" ${problem}`);
  if (RESERVED_SCHEMAS.has(name.toLowerCase())) {
    throw ApiError.invalidName(`Schema name "${name}" is reserved`);
  }
  return name;
}

/**
 * Checks a table name from a request: 400 when it breaks the rule.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTableName } from "./names.ts";
 *
 * assert.throws(() => checkTableName("users; drop table x"), /Table name/);
 * ```
 */
export function checkTableName(name: string): string {
  const problem = sqlNameProblem(name);
  if (problem) throw ApiError.invalidName(`Table name "${printable(name)}" ${problem}`);
  return name;
}

/**
 * Checks a template name: 400 when it breaks the rule.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTemplateName } from "./names.ts";
 *
 * assert.equal(checkTemplateName("orders-v2"), "orders-v2");
 * assert.throws(() => checkTemplateName("!#%"));
 * ```
 */
export function checkTemplateName(name: string): string {
  if (!TEMPLATE_NAME.test(name)) {
    throw ApiError.invalidName(
      `Template name "${
        printable(name)
      }" must be 1-32 characters: a letter, then letters, digits, "_" or "-"`,
    );
  }
  return name;
}

/** Case-insensitive identity of a name, as the storage engine compares them. */
export function nameKey(name: string): string {
  return name.toLowerCase();
}

/**
 * A name made safe to quote in a message: control characters escaped, long names cut.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { printable } from "./names.ts";
 *
 * assert.equal(printable("a\u0000b"), "a\\u0000b");
 * ```
 */
export function printable(text: string): string {
  const cut = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return cut.replaceAll(
    /[\p{C}\p{Zl}\p{Zp}"\\]/gu,
    (c) =>
      c === '"' || c === "\\" ? `\\${c}` : `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`,
  );
}

/**
 * Another program's message shown inside ours: control characters escaped, its own quotes left
 * as they are (it is not quoted again, so escaping them would show backslashes), cut at 300
 * characters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { printableMessage } from "./names.ts";
 *
 * assert.equal(printableMessage('syntax error at or near "FROM"\n'), 'syntax error at or near "FROM"\\u000a');
 * ```
 */
export function printableMessage(text: string): string {
  const cut = text.length > 300 ? `${text.slice(0, 300)}…` : text;
  return cut.replaceAll(
    /[\p{C}\p{Zl}\p{Zp}]/gu,
    (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`,
  );
}
