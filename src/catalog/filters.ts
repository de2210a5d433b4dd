/**
 * The PostgREST-style grammar of a records read (`GET /table/{name}/records`): which columns,
 * which rows, in what order, whether to count. Only the grammar: values stay text here, and
 * the store types and binds them.
 *
 * ```
 * select=a,b,"Unit Price"          columns, in that order; "" escapes a quote
 * <column>=[not.]<op>.<value>      filters, all ANDed
 *   ops: eq neq gt gte lt lte like ilike   value: the rest, dots and all
 *        in.(v1,"v,2")                     a list; quote items holding , ( ) or "
 *        is.null is.true is.false
 * order=a.desc.nullslast,b         asc (default) or desc, nullsfirst or nullslast
 * count=exact|estimated|none       exact by default: the total of the filtered rows; estimated
 *                                  from the engine's statistics
 * ```
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import { nameKey, printable } from "./names.ts";

/** A comparison a filter applies. */
export type FilterOp =
  | "eq"
  | "neq"
  | "gt"
  | "gte"
  | "lt"
  | "lte"
  | "like"
  | "ilike"
  | "in"
  | "is";

/**
 * One filter: `value` is the text to compare with, the list for `in`, and null, true or
 * false for `is`.
 */
export interface Filter {
  readonly column: string;
  readonly op: FilterOp;
  readonly negated: boolean;
  readonly value: string | readonly string[] | null | boolean;
}

/** One sort key; `nulls` absent leaves the engine's default (last ascending, first descending). */
export interface OrderTerm {
  readonly column: string;
  readonly direction: "asc" | "desc";
  readonly nulls?: "first" | "last";
}

/** How a read counts the rows its filters let through. */
export type CountMode = "exact" | "estimated" | "none";

/** A read as its query string asks for it; column names as the table spells them. */
export interface ReadQuery {
  /** The columns in the asked order; absent for all of them. */
  readonly select?: readonly string[];
  readonly filters: readonly Filter[];
  readonly order: readonly OrderTerm[];
  readonly count: CountMode;
}

/** A column as the grammar needs it: its name (its type is for the store's casts). */
export interface ColumnInfo {
  readonly name: string;
  readonly type: string;
}

/** Query parameters that are never filters, whatever columns the table has. */
export const RESERVED_PARAMETERS: ReadonlySet<string> = new Set([
  "schema",
  "offset",
  "limit",
  "select",
  "order",
  "after",
  "count",
  "timezone_offset",
]);

const VALUE_OPS: ReadonlySet<string> = new Set([
  "eq",
  "neq",
  "gt",
  "gte",
  "lt",
  "lte",
  "like",
  "ilike",
]);

/**
 * Parses a read's query parameters against the table's columns. Reserved parameters
 * ({@link RESERVED_PARAMETERS} and `extraReserved`) are left to the caller, except `select`,
 * `order` and `count`; every other parameter is a filter on a column.
 *
 * @throws {ApiError} 400 naming the parameter: a column the table lacks (in a filter, `select`
 * or `order`), an unknown operator, a malformed value or list, a column selected or ordered
 * by twice, or `select`, `order` or `count` given twice.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseReadQuery } from "./filters.ts";
 *
 * const columns = [{ name: "age", type: "INTEGER" }, { name: "Unit Price", type: "DOUBLE" }];
 * const query = parseReadQuery(
 *   new URLSearchParams('select="Unit Price",age&age=not.is.null&order=age.desc&limit=5'),
 *   columns,
 * );
 * assert.deepEqual(query.select, ["Unit Price", "age"]);
 * assert.deepEqual(query.filters, [{ column: "age", op: "is", negated: true, value: null }]);
 * assert.deepEqual(query.order, [{ column: "age", direction: "desc" }]);
 * assert.equal(query.count, "exact");
 * ```
 */
export function parseReadQuery(
  params: URLSearchParams | readonly (readonly [string, string])[],
  columns: readonly ColumnInfo[],
  extraReserved: Iterable<string> = [],
): ReadQuery {
  const reserved = new Set([...RESERVED_PARAMETERS, ...extraReserved]);
  const resolve = columnResolver(columns);
  const seen = new Set<string>();
  const filters: Filter[] = [];
  let select: string[] | undefined;
  let order: OrderTerm[] = [];
  let count: CountMode = "exact";
  for (const [key, value] of params) {
    if (reserved.has(key)) {
      if (key !== "select" && key !== "order" && key !== "count") continue;
      if (seen.has(key)) {
        throw ApiError.badRequest(`Query parameter ${key} is given more than once`);
      }
      seen.add(key);
      if (key === "select") select = parseSelect(value, resolve);
      else if (key === "order") order = parseOrder(value, resolve);
      else count = parseCount(value);
      continue;
    }
    filters.push(parseFilter(key, value, resolve));
  }
  return { ...(select ? { select } : {}), filters, order, count };
}

/** Finds a column by name: exactly as spelled first, then as DuckDB compares names. */
type Resolver = (name: string, parameter: string) => string;

function columnResolver(columns: readonly ColumnInfo[]): Resolver {
  const exact = new Set(columns.map((c) => c.name));
  const folded = new Map<string, string[]>();
  for (const { name } of columns) {
    const key = nameKey(name);
    folded.set(key, [...(folded.get(key) ?? []), name]);
  }
  return (name, parameter) => {
    if (exact.has(name)) return name;
    const matches = folded.get(nameKey(name)) ?? [];
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) {
      throw ApiError.badRequest(
        `Query parameter ${parameter} names column "${
          printable(name)
        }", which matches ${matches.length} columns when case is ignored; spell it exactly`,
      );
    }
    throw ApiError.badRequest(
      `Query parameter ${parameter} names column "${printable(name)}", which the table lacks`,
    );
  };
}

function parseSelect(text: string, resolve: Resolver): string[] | undefined {
  if (text.trim() === "*") return undefined;
  const names: string[] = [];
  for (const item of splitTopLevel(text, "select")) {
    const { name, rest } = leadingName(item, "select");
    if (rest !== "") {
      throw ApiError.badRequest(
        `Query parameter select has "${printable(item)}", which is not a column name`,
      );
    }
    const column = resolve(name, "select");
    if (names.includes(column)) {
      throw ApiError.badRequest(`Query parameter select names column "${column}" twice`);
    }
    names.push(column);
  }
  return names;
}

const DIRECTION = /\.(asc|desc)$/;
const NULLS = /\.(nullsfirst|nullslast)$/;

function parseOrder(text: string, resolve: Resolver): OrderTerm[] {
  const terms: OrderTerm[] = [];
  for (const item of splitTopLevel(text, "order")) {
    const { name: leading, rest, quoted } = leadingName(item, "order");
    // A bare name may itself hold dots, so the modifiers are taken off its end.
    let body = quoted ? rest : leading;
    const nulls = NULLS.exec(body)?.[1];
    if (nulls) body = body.slice(0, -nulls.length - 1);
    const direction = DIRECTION.exec(body)?.[1] as "asc" | "desc" | undefined;
    if (direction) body = body.slice(0, -direction.length - 1);
    if (quoted ? body !== "" : body === "") {
      throw ApiError.badRequest(
        `Query parameter order has "${
          printable(item)
        }"; write a column, then optionally .asc or .desc, then .nullsfirst or .nullslast`,
      );
    }
    const column = resolve(quoted ? leading : body, "order");
    if (terms.some((t) => t.column === column)) {
      throw ApiError.badRequest(`Query parameter order names column "${column}" twice`);
    }
    terms.push({
      column,
      direction: direction ?? "asc",
      ...(nulls ? { nulls: nulls === "nullsfirst" ? "first" : "last" } : {}),
    });
  }
  return terms;
}

function parseCount(text: string): CountMode {
  if (text === "exact" || text === "estimated" || text === "none") return text;
  throw ApiError.badRequest(
    `Query parameter count must be exact, estimated or none, not "${printable(text)}"`,
  );
}

function parseFilter(key: string, text: string, resolve: Resolver): Filter {
  const column = resolve(key, key);
  const negated = text.startsWith("not.");
  const body = negated ? text.slice(4) : text;
  const dot = body.indexOf(".");
  const op = dot < 0 ? body : body.slice(0, dot);
  const operand = dot < 0 ? undefined : body.slice(dot + 1);
  if (VALUE_OPS.has(op) && operand !== undefined) {
    return { column, op: op as FilterOp, negated, value: operand };
  }
  if (op === "in" && operand !== undefined) {
    return { column, op, negated, value: parseList(operand, key) };
  }
  if (op === "is" && operand !== undefined) {
    const value = ({ null: null, true: true, false: false } as const)[
      operand.toLowerCase() as "null"
    ];
    if (value === undefined) {
      throw ApiError.badRequest(
        `Query parameter ${key} has is.${printable(operand)}; use is.null, is.true or is.false`,
      );
    }
    return { column, op, negated, value };
  }
  if (VALUE_OPS.has(op) || op === "in" || op === "is") {
    throw ApiError.badRequest(`Query parameter ${key} has ${op} without a value after "${op}."`);
  }
  throw ApiError.badRequest(
    `Query parameter ${key} has the unknown operator "${
      printable(op)
    }"; use eq, neq, gt, gte, lt, lte, like, ilike, in or is, optionally after not.`,
  );
}

function parseList(text: string, parameter: string): string[] {
  if (!text.startsWith("(") || !text.endsWith(")")) {
    throw ApiError.badRequest(
      `Query parameter ${parameter} has in.${printable(text)}; write in.(a,b,"c,d")`,
    );
  }
  const inner = text.slice(1, -1);
  if (inner.trim() === "") return [];
  return splitTopLevel(inner, parameter).map((item) => {
    if (item.trim().startsWith('"')) {
      const { name, rest } = leadingName(item, parameter);
      if (rest.trim() !== "") {
        throw ApiError.badRequest(
          `Query parameter ${parameter} has text after the quoted value "${printable(name)}"`,
        );
      }
      return name;
    }
    if (/[()"]/.test(item)) {
      throw ApiError.badRequest(
        `Query parameter ${parameter} has the value "${
          printable(item)
        }"; quote a value holding ( ) or "`,
      );
    }
    return item.trim();
  });
}

/**
 * `text` cut at the commas outside double quotes, each piece trimmed; an empty piece
 * (`a,,b`, a trailing comma) or an unclosed quote is a 400 naming `parameter`.
 */
function splitTopLevel(text: string, parameter: string): string[] {
  const items: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i <= text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted; // A doubled quote toggles twice: still inside.
    else if ((c === "," && !quoted) || i === text.length) {
      if (quoted) {
        throw ApiError.badRequest(`Query parameter ${parameter} has a quote that is not closed`);
      }
      const item = text.slice(start, i).trim();
      if (item === "") throw ApiError.badRequest(`Query parameter ${parameter} has an empty item`);
      items.push(item);
      start = i + 1;
    }
  }
  return items;
}

/**
 * The name an item starts with: a double-quoted one (`""` a quote inside) and what follows
 * it, or the whole item bare.
 */
function leadingName(
  item: string,
  parameter: string,
): { name: string; rest: string; quoted: boolean } {
  const text = item.trim();
  if (!text.startsWith('"')) return { name: text, rest: "", quoted: false };
  let name = "";
  for (let i = 1; i < text.length; i++) {
    if (text[i] !== '"') {
      name += text[i];
    } else if (text[i + 1] === '"') {
      name += '"';
      i++;
    } else {
      return { name, rest: text.slice(i + 1), quoted: true };
    }
  }
  throw ApiError.badRequest(`Query parameter ${parameter} has a quote that is not closed`);
}

/** Longest cursor accepted: keys of a few columns fit many times over. */
export const MAX_CURSOR_LENGTH = 8192;

/**
 * The text a cursor is bound to: the order it continues, so that it is refused under any
 * other order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { orderSignature } from "./filters.ts";
 *
 * assert.equal(
 *   orderSignature([{ column: "a", direction: "desc", nulls: "last" }, { column: "b", direction: "asc" }]),
 *   '[["a","desc","last"],["b","asc",""]]',
 * );
 * ```
 */
export function orderSignature(order: readonly OrderTerm[]): string {
  return JSON.stringify(order.map((t) => [t.column, t.direction, t.nulls ?? ""]));
}

/**
 * An opaque cursor (`after=`) for the row holding `values` (its sort key) under the order
 * `orderSignature` names: base64url of JSON. A bigint keeps its every digit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeCursor, encodeCursor } from "./filters.ts";
 *
 * const cursor = encodeCursor([9007199254740993n, "Zoë", null], "sig");
 * assert.match(cursor, /^[A-Za-z0-9_-]+$/);
 * assert.deepEqual(decodeCursor(cursor, "sig"), [9007199254740993n, "Zoë", null]);
 * assert.throws(() => decodeCursor(cursor, "other"), /another order/);
 * ```
 */
export function encodeCursor(values: readonly unknown[], orderSignature: string): string {
  const json = JSON.stringify(
    { o: orderSignature, v: values },
    (_key, value) => typeof value === "bigint" ? { $bigint: value.toString() } : value,
  );
  return toBase64Url(new TextEncoder().encode(json));
}

/**
 * The sort key a cursor of {@link encodeCursor} holds.
 *
 * @throws {ApiError} 400 for text that is no cursor of this service, or one made for an order
 * other than `orderSignature`.
 */
export function decodeCursor(text: string, orderSignature: string): unknown[] {
  const invalid = () =>
    ApiError.badRequest(
      "Query parameter after is not a cursor this service gave out; use the one a previous page returned",
    );
  if (text.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]*$/.test(text)) throw invalid();
  let parsed: unknown;
  try {
    const json = new TextDecoder("utf-8", { fatal: true }).decode(fromBase64Url(text));
    parsed = JSON.parse(json, (_key, value) => {
      if (
        value !== null && typeof value === "object" && !Array.isArray(value) &&
        Object.keys(value).length === 1 && typeof value.$bigint === "string" &&
        /^-?\d+$/.test(value.$bigint)
      ) return BigInt(value.$bigint);
      return value;
    });
  } catch {
    throw invalid();
  }
  if (
    parsed === null || typeof parsed !== "object" || Array.isArray(parsed) ||
    typeof (parsed as { o?: unknown }).o !== "string" ||
    !Array.isArray((parsed as { v?: unknown }).v)
  ) throw invalid();
  const cursor = parsed as { o: string; v: unknown[] };
  if (cursor.o !== orderSignature) {
    throw ApiError.badRequest(
      "Query parameter after holds a cursor made for another order; keep the order of the page that returned it",
    );
  }
  return cursor.v;
}

function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array {
  const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}
