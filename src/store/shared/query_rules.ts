/**
 * What both engines' checks of a client's query (`POST /api/v1/query`) decide alike, whatever
 * parser gives the tree: exactly one statement, the schemas and databases a token may read, the
 * tables a query reads in one order, the parameters it takes, and the words of each refusal.
 * Each engine's query_guard.ts walks its own parser's tree and asks these.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { printable, RESERVED_SCHEMAS } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";

/** Whom a query is checked for. */
export interface QueryScope {
  /** Where an unqualified table name is looked for. */
  readonly defaultSchema: string;
  /** The schemas the token may read (its `schemas` claim); all of them when absent. */
  readonly visibleSchemas?: readonly string[];
}

/** Refuses (400) a parse of `count` statements unless it is one. */
export function checkOneStatement(count: number): void {
  if (count === 0) throw ApiError.badRequest("The query is empty");
  if (count > 1) {
    throw ApiError.badRequest(`The query holds ${count} statements; send exactly one`);
  }
}

/** The 400 for a statement that is not a query. */
export function notAQuery(): ApiError {
  return ApiError.badRequest(
    "Only a single read-only query is allowed: SELECT, WITH, VALUES or a set operation of them",
  );
}

/** The 400 for a construct, named as the tree names it, that a read-only query may not use. */
export function unsupported(construct: string): ApiError {
  return ApiError.badRequest(
    `The query uses ${printable(construct)}, which a read-only query may not`,
  );
}

/** The 400 for a call outside the allowed ones: `what` (`function`, …) `name`, qualified. */
export function notAllowed(what: string, name: string): ApiError {
  return ApiError.badRequest(`The query calls ${what} "${printable(name)}", which is not allowed`);
}

/** The 403 for a table of a database other than the service's. */
export function otherDatabase(database: string): ApiError {
  return ApiError.forbidden(`The query may not read database "${printable(database)}"`);
}

/**
 * Refuses (403) a schema the query may not read: the service's and the engine's own
 * ({@link RESERVED_SCHEMAS}, and those `engineOwns` says are), and any outside the scope's
 * `visibleSchemas`, each compared ignoring case.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkReadableSchema } from "./query_rules.ts";
 *
 * checkReadableSchema("Sales", { defaultSchema: "public", visibleSchemas: ["sales"] });
 * assert.throws(
 *   () => checkReadableSchema("hr", { defaultSchema: "public", visibleSchemas: ["sales"] }),
 *   /may not read schema "hr"/,
 * );
 * ```
 */
export function checkReadableSchema(
  schema: string,
  scope: QueryScope,
  engineOwns: (key: string) => boolean = () => false,
): void {
  const key = schema.toLowerCase();
  const visible = scope.visibleSchemas;
  if (
    RESERVED_SCHEMAS.has(key) || engineOwns(key) ||
    (visible !== undefined && !visible.some((s) => s.toLowerCase() === key))
  ) {
    throw ApiError.forbidden(`The query may not read schema "${printable(schema)}"`);
  }
}

/** The tables a query reads, each once, listed by schema, then name. */
export class TablesRead<T extends TableRef = TableRef> {
  readonly #tables = new Map<string, T>();

  /** Notes `table` as read. */
  add(table: T): void {
    this.#tables.set(`${table.schema}\u0000${table.name}`, table);
  }

  /** The tables read, in a stable order. */
  list(): T[] {
    return [...this.#tables.values()].sort((a, b) =>
      a.schema === b.schema ? (a.name < b.name ? -1 : 1) : a.schema < b.schema ? -1 : 1
    );
  }
}

/** The 400 for a query sent a number of parameters other than it takes. */
export function wrongParameterCount(takes: number, given: number): ApiError {
  return ApiError.badRequest(
    `The query takes ${takes} parameter${takes === 1 ? "" : "s"}, but ${given} ${
      given === 1 ? "was" : "were"
    } given`,
  );
}
