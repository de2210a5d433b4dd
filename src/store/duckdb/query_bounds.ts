/**
 * The bounds a client's query meets on DuckDB's parse tree, before it runs (see
 * `../shared/query_bounds.ts` for the depth and why). DuckDB's `interrupt()` is not looked
 * at while it binds, folds constants or evaluates one value, and its memory limit does not
 * cover the strings and lists a function builds, so what would run past the deadline or the
 * memory bound in one step is refused before it starts:
 *
 * - expressions nested deeper than {@link MAX_EXPRESSION_DEPTH}, lambdas deeper than
 *   {@link MAX_LAMBDA_DEPTH};
 * - a call asked for a text longer than {@link MAX_BUILT_TEXT} or a list longer than
 *   {@link MAX_BUILT_LIST} by arguments written in the query ({@link sizeProbes}: evaluated
 *   by DuckDB before the query runs, innermost first);
 * - LIKE, ILIKE and GLOB patterns that DuckDB would match by backtracking run as RE2 regular
 *   expressions instead (patterns.ts), rewritten in the tree.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { MAX_EXPRESSION_DEPTH, tooDeep } from "../shared/query_bounds.ts";
import { globRegex, likeRegex, needsRegex } from "./patterns.ts";
import { isNode, type Node } from "./query_tree.ts";

/** Deepest nesting of lambdas (`x -> …`) inside one another: binding them grows exponentially. */
export const MAX_LAMBDA_DEPTH = 8;

/** Longest text a query may ask a function to build (`repeat`, `lpad`, `rpad`), in characters. */
export const MAX_BUILT_TEXT = 1_000_000;

/** Most elements a query may ask a function to build (`range`, `list_resize`, `repeat` of a list). */
export const MAX_BUILT_LIST = 100_000;

/** A call whose size comes from arguments written in the query, to evaluate before it runs. */
export interface SizeProbe {
  /** The function, lower case. */
  readonly name: string;
  /** Its arguments, each a constant expression. */
  readonly args: readonly Node[];
}

/** Functions that build a text from a count: the count's argument. */
const TEXT_BUILDERS: ReadonlyMap<string, number> = new Map([
  ["lpad", 1],
  ["rpad", 1],
  ["bar", 3],
  ["to_base", 2],
]);

/** Functions that build a list of a count of elements: the count's argument. */
const LIST_BUILDERS: ReadonlyMap<string, number> = new Map([
  ["list_resize", 1],
  ["array_resize", 1],
]);

/**
 * Edit distances, whose cost is the product of their texts' lengths and which DuckDB does not
 * interrupt: 20,000 × 20,000 characters took 1.1 s, and ran on 4.4 s past an interrupt at 40,000.
 */
const DISTANCES: ReadonlySet<string> = new Set(["levenshtein", "damerau_levenshtein", "editdist3"]);

/** Most characters × characters an edit distance may compare: about a second of a core. */
const MAX_DISTANCE_CELLS = 400_000_000;

/** Functions building a series of values between bounds. */
const SERIES: ReadonlySet<string> = new Set(["range", "generate_series"]);

/** Functions whose format string may ask for a width. */
const FORMATTERS: ReadonlySet<string> = new Set(["printf", "format"]);

/** LIKE's operators: negated, case-insensitive. */
const LIKE_OPERATORS: ReadonlyMap<string, { not: boolean; fold: boolean }> = new Map([
  ["~~", { not: false, fold: false }],
  ["!~~", { not: true, fold: false }],
  ["~~*", { not: false, fold: true }],
  ["!~~*", { not: true, fold: true }],
  ["like_escape", { not: false, fold: false }],
  ["not_like_escape", { not: true, fold: false }],
  ["ilike_escape", { not: false, fold: true }],
  ["not_ilike_escape", { not: true, fold: true }],
]);

/**
 * Checks the depth of `tree`'s expressions and lambdas, rewrites its backtracking patterns in
 * place and lists the calls whose sizes must be evaluated (innermost first).
 *
 * @throws {ApiError} 400 naming the bound passed, or for a pattern that cannot be rewritten.
 */
export function boundQuery(tree: Node): SizeProbe[] {
  const probes: { probe: SizeProbe; depth: number }[] = [];
  visit(tree, 0, 0, probes);
  return probes.sort((a, b) => b.depth - a.depth).map((p) => p.probe);
}

function visit(
  value: unknown,
  depth: number,
  lambdas: number,
  probes: { probe: SizeProbe; depth: number }[],
): void {
  if (Array.isArray(value)) {
    for (const item of value) visit(item, depth, lambdas, probes);
    return;
  }
  if (!isNode(value)) return;
  // A table function (`FROM range(1e12)`) streams its rows and stops at an interrupt.
  if (value.type === "TABLE_FUNCTION" && isNode(value.function)) tableCalls.add(value.function);
  if (typeof value.class === "string") {
    if (++depth > MAX_EXPRESSION_DEPTH) throw tooDeep();
    if (value.class === "LAMBDA" && ++lambdas > MAX_LAMBDA_DEPTH) {
      throw ApiError.badRequest(
        `The query nests lambdas more than ${MAX_LAMBDA_DEPTH} deep, the most allowed`,
      );
    }
    if (value.class === "FUNCTION" && !tableCalls.has(value)) {
      const probe = sizeProbe(value);
      if (probe) probes.push({ probe, depth });
      rewritePattern(value);
    }
  }
  for (const child of Object.values(value)) visit(child, depth, lambdas, probes);
}

/** The calls of table functions met, which build no value. */
const tableCalls = new WeakSet<object>();

function children(call: Node): Node[] {
  return Array.isArray(call.children) ? call.children.filter(isNode) : [];
}

/** Expression classes whose value depends on the rows, the parameters or a subquery. */
const VARYING: ReadonlySet<string> = new Set([
  "COLUMN_REF",
  "PARAMETER",
  "SUBQUERY",
  "LAMBDA",
  "LAMBDA_REF",
  "WINDOW",
  "STAR",
  "POSITIONAL_REFERENCE",
]);

/**
 * Whether `node` is a constant expression: nothing in it depends on rows, parameters or a
 * subquery.
 */
function constant(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(constant);
  if (!isNode(node)) return true;
  if (typeof node.class === "string" && VARYING.has(node.class)) return false;
  // random() and uuid() count as constants: the probe evaluates them once, and a size that
  // depends on them (`random() * 0 + 1e7`) is bounded by the value it gets.
  return Object.values(node).every(constant);
}

/** The size probe of `call` when it builds something sized by constant arguments. */
function sizeProbe(call: Node): SizeProbe | undefined {
  const name = String(call.function_name ?? "").toLowerCase();
  const args = children(call);
  const sized = name === "repeat" || SERIES.has(name) || TEXT_BUILDERS.has(name) ||
    LIST_BUILDERS.has(name) || DISTANCES.has(name) || (FORMATTERS.has(name) && args.length > 0);
  if (!sized) return undefined;
  const used = FORMATTERS.has(name) ? args.slice(0, 1) : args;
  if (used.length === 0 || !used.every(constant)) return undefined;
  return { name, args: used };
}

/** A `{fmt}` replacement field: `{[id]:[[fill]align][sign][#][0][width][.precision][type]}`. */
const FMT_SPEC =
  /\{[^{}:]*:(?:[^{}]?[<>^])?[-+ ]?#?0?(\d+|\{[^{}]*\})?(?:\.(\d+|\{[^{}]*\}))?[a-zA-Z]?\}/g;

/**
 * The widths and precisions a format string asks for: `printf`'s `%-10.3f` and `fmt`'s
 * `{:>10}`; a width given as an argument (`%*d`, `{:>{}}`) is Infinity, since it is not read.
 */
function formatWidths(name: string, format: string): number[] {
  const specs = name === "printf"
    ? [...format.matchAll(/%[-+ #0']*(\*|\d*)(?:\.(\*|\d*))?[a-zA-Z%]/g)]
    : [...format.matchAll(FMT_SPEC)];
  return specs.flatMap((m) =>
    [m[1], m[2]].map((w) =>
      w === undefined || w === "" ? 0 : /^\d+$/.test(w) ? Number(w) : Infinity
    )
  );
}

/**
 * Evaluates each probe's arguments with DuckDB, innermost first (an inner call's size is
 * checked before an outer one's arguments build it), and checks the sizes they ask for.
 * `select` runs a SELECT of the given expressions, aliased `x0`, `x1`, …, wrapped as the
 * outer SQL text says (`{}` standing for the inner SELECT), and answers its one row.
 *
 * @throws {ApiError} 400 naming the bound passed.
 */
export async function checkSizes(
  probes: readonly SizeProbe[],
  select: (args: readonly Node[], outer: string) => Promise<Record<string, unknown>>,
): Promise<void> {
  for (const probe of probes) {
    const { name, args } = probe;
    const items = args.map((_, i) => `typeof(x${i}) AS t${i}, CAST(x${i} AS VARCHAR) AS v${i}`);
    const row = await select(args, `SELECT ${items.join(", ")} FROM ({})`);
    const type = (i: number) => String(row[`t${i}`]);
    const value = (i: number) => row[`v${i}`] === null ? null : String(row[`v${i}`]);
    const number = (i: number) => Number(value(i) ?? 0);
    if (name === "repeat") {
      // A list (`INTEGER[]`) or an array of fixed size (`INTEGER[3]`).
      if (/\[\d*\]$/.test(type(0))) {
        const { n } = await select(args, "SELECT len(x0) AS n FROM ({})");
        if (number(1) * Math.max(1, Number(n)) > MAX_BUILT_LIST) throw tooLong(name, "list");
      } else if (number(1) * Math.max(1, [...(value(0) ?? "")].length) > MAX_BUILT_TEXT) {
        throw tooLong(name, "text");
      }
    } else if (TEXT_BUILDERS.has(name)) {
      if (number(TEXT_BUILDERS.get(name)!) > MAX_BUILT_TEXT) throw tooLong(name, "text");
    } else if (LIST_BUILDERS.has(name)) {
      if (number(LIST_BUILDERS.get(name)!) > MAX_BUILT_LIST) throw tooLong(name, "list");
    } else if (DISTANCES.has(name)) {
      const cells = [...(value(0) ?? "")].length * [...(value(1) ?? "")].length;
      if (cells > MAX_DISTANCE_CELLS) {
        throw ApiError.badRequest(
          `The query asks ${name}() to compare texts whose lengths multiply past ${MAX_DISTANCE_CELLS}, the most allowed`,
        );
      }
    } else if (FORMATTERS.has(name)) {
      const widths = formatWidths(name, value(0) ?? "").reduce((a, b) => a + b, 0);
      if (widths > MAX_BUILT_TEXT) throw tooLong(name, "text");
    } else if (args.some((_, i) => /DATE|TIME|INTERVAL/.test(type(i)))) {
      // Dates and timestamps a step apart: the span in microseconds over the step's (a month
      // counted as 30 days, as DuckDB's epoch() does), a bound within a few per cent.
      if (args.length !== 3) continue;
      const span = await select(
        args,
        "SELECT date_diff('microsecond', CAST(x0 AS TIMESTAMP), CAST(x1 AS TIMESTAMP)) / " +
          "greatest(abs(epoch(CAST(x2 AS INTERVAL))) * 1000000, 1) AS n FROM ({})",
      );
      if (Math.abs(Number(span.n)) > MAX_BUILT_LIST) throw tooLong(name, "list");
    } else if (seriesLength(name, args.map((_, i) => number(i))) > MAX_BUILT_LIST) {
      throw tooLong(name, "list");
    }
  }
}

function tooLong(name: string, what: "text" | "list"): ApiError {
  return what === "text"
    ? ApiError.badRequest(
      `The query asks ${name}() for a text longer than ${MAX_BUILT_TEXT} characters, the most allowed`,
    )
    : ApiError.badRequest(
      `The query asks ${name}() for a list longer than ${MAX_BUILT_LIST} elements, the most allowed`,
    );
}

/**
 * Elements of a numeric series (`range` leaves out its end, `generate_series` keeps it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seriesLength } from "./query_bounds.ts";
 *
 * assert.equal(seriesLength("range", [10]), 10);
 * assert.equal(seriesLength("generate_series", [1, 10, 3]), 4);
 * assert.equal(seriesLength("range", [5, 0]), 0);
 * ```
 */
export function seriesLength(name: string, args: readonly number[]): number {
  const [start, stop, step] = args.length === 1
    ? [0, args[0]!, 1]
    : [args[0]!, args[1]!, args[2] ?? 1];
  if (step === 0 || !Number.isFinite(start) || !Number.isFinite(stop)) return 0;
  const span = (stop - start) / step;
  if (span < 0) return 0;
  return name === "generate_series" ? Math.floor(span) + 1 : Math.ceil(span);
}

/** A function call node. */
function call(name: string, args: Node[]): Node {
  return {
    class: "FUNCTION",
    type: "FUNCTION",
    alias: "",
    query_location: 0,
    function_name: name,
    schema: "",
    children: args,
    filter: null,
    order_bys: { type: "ORDER_MODIFIER", orders: [] },
    distinct: false,
    is_operator: false,
    export_state: false,
    catalog: "",
  };
}

/** A VARCHAR constant node. */
function text(value: string): Node {
  return {
    class: "CONSTANT",
    type: "VALUE_CONSTANT",
    alias: "",
    query_location: 0,
    value: { type: { id: "VARCHAR", type_info: null }, is_null: false, value },
  };
}

/** Whether `node` is, or holds, a COLLATE expression. */
function collated(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(collated);
  if (!isNode(node)) return false;
  return node.class === "COLLATE" || Object.values(node).some(collated);
}

/** Whether `node` is a VARCHAR constant (under any COLLATE) without `_`. */
function constantPatternWithoutUnderscore(node: Node): boolean {
  const inner = node.class === "COLLATE" && isNode(node.child) ? node.child : node;
  const value = textConstant(inner);
  return value !== undefined && !value.includes("_");
}

/** The VARCHAR constant `node` holds, or undefined. */
function textConstant(node: Node | undefined): string | undefined {
  if (node?.class !== "CONSTANT" || !isNode(node.value)) return undefined;
  const { type, is_null, value } = node.value;
  if (is_null || !isNode(type) || type.id !== "VARCHAR" || typeof value !== "string") {
    return undefined;
  }
  return value;
}

/**
 * `like` in place as `regexp_full_match` of RE2 when DuckDB would backtrack on it: a LIKE
 * whose pattern is a constant with no `_` stays (DuckDB matches it by prefix, suffix and
 * substring, in linear time); ILIKE, escaped, `_` and patterns known only when the query runs
 * are rewritten, GLOB with a constant pattern too.
 */
function rewritePattern(node: Node): void {
  const name = String(node.function_name ?? "").toLowerCase();
  const args = children(node);
  if (name === "~~~") {
    const pattern = textConstant(args[1]);
    if (pattern === undefined) {
      throw ApiError.badRequest("The query matches GLOB against a pattern that is not a literal");
    }
    return replace(node, regexpMatch(args[0]!, text(globRegex(pattern)), false, false));
  }
  const like = LIKE_OPERATORS.get(name);
  if (!like || args.length < 2) return;
  const [subject, pattern, escapeNode] = args as [Node, Node, Node | undefined];
  if (collated(subject) || collated(pattern)) {
    // DuckDB's LIKE honours a collation (nocase, noaccent); RE2 would not.
    if (constantPatternWithoutUnderscore(pattern) && !escapeNode && !like.fold) return;
    throw ApiError.badRequest(
      "The query matches LIKE or ILIKE under a COLLATE; fold the text instead (lower(x) LIKE …)",
    );
  }
  const constantPattern = textConstant(pattern);
  let escape = "";
  if (escapeNode) {
    const given = textConstant(escapeNode);
    if (given === undefined || constantPattern === undefined) {
      throw ApiError.badRequest(
        "The query matches LIKE … ESCAPE against a pattern or escape that is not a literal",
      );
    }
    // DuckDB takes an escape of one byte.
    if (new TextEncoder().encode(given).length > 1) {
      throw ApiError.badRequest("The query's LIKE … ESCAPE takes a single ASCII character");
    }
    escape = given;
  }
  if (!like.fold && constantPattern !== undefined && !needsRegex(constantPattern, escape)) {
    return;
  }
  let regex: Node;
  if (constantPattern !== undefined) {
    try {
      // ILIKE folds the pattern to lower case, its escape character not.
      const folded = like.fold ? constantPattern.toLowerCase() : constantPattern;
      regex = text(likeRegex(folded, escape));
    } catch (error) {
      throw ApiError.badRequest(`The query's LIKE pattern is invalid: ${(error as Error).message}`);
    }
  } else {
    // Known only when the query runs: escaped for RE2 by DuckDB, then `%` (escaped `\%`) is
    // any text and `_` (left as it is) one character.
    regex = call("replace", [
      call("replace", [call("regexp_escape", [pattern]), text("\\%"), text(".*")]),
      text("_"),
      text("."),
    ]);
  }
  replace(node, regexpMatch(subject, regex, like.fold, like.not));
}

/** `regexp_full_match(subject, regex, 's')`, both folded to lower case when `fold`, negated when `not`. */
function regexpMatch(subject: Node, regex: Node, fold: boolean, not: boolean): Node {
  const match = call("regexp_full_match", [
    fold ? call("lower", [subject]) : subject,
    fold ? call("lower", [regex]) : regex,
    text("s"),
  ]);
  if (!not) return match;
  return {
    class: "OPERATOR",
    type: "OPERATOR_NOT",
    alias: "",
    query_location: 0,
    children: [match],
  };
}

/** Makes `node` the `replacement`, keeping its alias. */
function replace(node: Node, replacement: Node): void {
  const alias = node.alias;
  for (const key of Object.keys(node)) delete node[key];
  Object.assign(node, replacement, { alias });
}
