/**
 * Column defaults on PostgreSQL: exactly one scalar expression, read on PostgreSQL's own
 * grammar (libpg_query, as the `/query` check reads queries), then checked against its
 * column's type by PostgreSQL.
 *
 * The text is parsed as `SELECT <text>` and never run before its tree passes: one statement,
 * one unnamed target and no clause; every node of the expression of a kind in {@link NODES}
 * (no column, subquery, parameter or star); every function on {@link DEFAULT_FUNCTIONS}, cheap
 * and unable to reach other objects, and never an aggregate or window call; types as `/query`
 * allows them. Only then is it evaluated once, cast to the column's type. The DDL takes the
 * text in parentheses, with a line break before the closing one when it holds `--`, so a
 * trailing comment ends there; PostgreSQL stores the parsed expression and `pg_get_expr()` renders it back.
 *
 * @module
 */

import { printable, printableMessage } from "../../catalog/names.ts";
import type { Session } from "./database.ts";
import { ALLOWED_VALUE_FUNCTIONS, REFUSED_TYPES, SYNTAX_FUNCTIONS } from "./query_functions.ts";
import { isNode, type Node } from "./query_guard.ts";
import { withPostgresParser } from "./query_parser.ts";

/** Longest default text, as in the contract. */
const MAX_DEFAULT_LENGTH = 4096;

/**
 * The functions a default may call: clock, randomness, and cheap scalar functions of their
 * arguments. Sequences are off the list (a serial type makes a column's own), as are
 * settings (they would reveal paths) and anything that builds large values (`repeat`).
 */
export const DEFAULT_FUNCTIONS: ReadonlySet<string> = new Set([
  "now",
  "transaction_timestamp",
  "statement_timestamp",
  "clock_timestamp",
  "timeofday",
  "gen_random_uuid",
  "random",
  "make_date",
  "make_time",
  "make_timestamp",
  "make_timestamptz",
  "make_interval",
  "to_timestamp",
  "to_date",
  "to_char",
  "date_trunc",
  "date_part",
  "extract",
  "timezone",
  "lower",
  "upper",
  "concat",
  "btrim",
  "ltrim",
  "rtrim",
  "abs",
  "round",
  "floor",
  "ceil",
  "ceiling",
  "json_build_object",
  "json_build_array",
  "jsonb_build_object",
  "jsonb_build_array",
  "to_json",
  "to_jsonb",
]);

/** The node kinds a default's expression may hold; any other kind is refused. */
const NODES: ReadonlySet<string> = new Set([
  "A_ArrayExpr",
  "A_Const",
  "A_Expr",
  "BitString",
  "Boolean",
  "BooleanTest",
  "BoolExpr",
  "CaseExpr",
  "CaseWhen",
  "CoalesceExpr",
  "Float",
  "FuncCall",
  "Integer",
  "List",
  "MinMaxExpr",
  "NullTest",
  "SQLValueFunction",
  "String",
  "TypeCast",
  "TypeName",
]);

/** What a `FuncCall` may not carry: aggregate and window forms. */
const AGGREGATE_FIELDS = [
  "agg_order",
  "agg_filter",
  "over",
  "agg_within_group",
  "agg_star",
  "agg_distinct",
  "func_variadic",
];

/** The text of a list of `String` nodes: a qualified name. */
function names(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((item) =>
    isNode(item) && isNode(item.String) ? String(item.String.sval ?? "") : "?"
  );
}

/**
 * Why `text` is not one scalar expression a default may be, or undefined when it is. Reads
 * the text only; whether its value fits the column's type is PostgreSQL's call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultProblem } from "./defaults.ts";
 *
 * assert.equal(await defaultProblem("'x' || 'y'"), undefined);
 * assert.equal(await defaultProblem("1 + 2 * 3 -- a comment"), undefined);
 * assert.match((await defaultProblem("1; DROP TABLE t"))!, /exactly one/);
 * assert.match((await defaultProblem("(SELECT 1)"))!, /SubLink/);
 * assert.match((await defaultProblem("pg_sleep(1)"))!, /pg_sleep/);
 * ```
 */
export async function defaultProblem(text: string): Promise<string | undefined> {
  // Tabs and line breaks are fine in an expression; other control characters are not.
  if (/[\p{Cc}]/u.test(text.replaceAll(/[\t\n\r]/g, ""))) return "contains a control character";
  if (text.length > MAX_DEFAULT_LENGTH) return `is longer than ${MAX_DEFAULT_LENGTH} characters`;
  if (text.trim() === "") return "is empty";
  let tree: unknown;
  try {
    tree = await withPostgresParser((parser) => parser.parseSync(`SELECT ${text}`));
  } catch (error) {
    const said = error instanceof Error ? error.message : String(error);
    return `"${printable(text)}" is not an expression: ${printableMessage(said)}`;
  }
  const statements = isNode(tree) && Array.isArray(tree.stmts) ? tree.stmts : [];
  const raw = statements.length === 1 && isNode(statements[0]) ? statements[0] : undefined;
  const select = isNode(raw?.stmt) && isNode(raw.stmt.SelectStmt) ? raw.stmt.SelectStmt : {};
  const targets = Array.isArray(select.targetList) ? select.targetList : [];
  const target = targets.length === 1 && isNode(targets[0]) ? targets[0].ResTarget : undefined;
  const plain = raw !== undefined && raw.stmt_len === undefined &&
    Object.keys(select).every((key) => ["targetList", "limitOption", "op"].includes(key)) &&
    select.op === "SETOP_NONE" && isNode(target) &&
    Object.keys(target).every((key) => key === "val" || key === "location");
  if (!plain) {
    return `"${
      printable(text)
    }" must be exactly one scalar expression, without clauses, aliases or a semicolon`;
  }
  const found = refusedNode(target.val);
  return found === undefined ? undefined : `"${printable(text)}" ${found}`;
}

/** The first thing in an expression tree a default may not hold, in words. */
function refusedNode(value: unknown): string | undefined {
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = refusedNode(item);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (!isNode(value)) return undefined;
  for (const [key, body] of Object.entries(value)) {
    if (!/^[A-Z]/.test(key)) {
      const found = key === "typeName" ? refusedNode({ TypeName: body }) : refusedNode(body);
      if (found !== undefined) return found;
      continue;
    }
    if (!NODES.has(key) || !isNode(body)) {
      return `must be a scalar expression of literals, operators, casts and functions; ` +
        `it holds ${key}`;
    }
    const problem = nodeProblem(key, body);
    if (problem !== undefined) return problem;
    const found = refusedNode(body);
    if (found !== undefined) return found;
  }
  return undefined;
}

function nodeProblem(kind: string, body: Node): string | undefined {
  switch (kind) {
    case "FuncCall": {
      const parts = names(body.funcname);
      const name = parts.at(-1) ?? "";
      const plain = parts.length === 1 ||
        (parts.length === 2 && parts[0] === "pg_catalog" && SYNTAX_FUNCTIONS.has(name));
      if (!plain || !DEFAULT_FUNCTIONS.has(name)) {
        const called = printable(parts.join("."));
        return /^(nextval|currval|setval)$/.test(name)
          ? `may not call ${called}(); use the type serial or bigserial for a column drawing ` +
            "from a sequence"
          : `may not call ${called}(); defaults may use literals, operators, casts and ` +
            "simple functions such as now()";
      }
      const aggregate = AGGREGATE_FIELDS.find((field) => body[field] !== undefined);
      if (aggregate !== undefined) return `may not call ${name}() as an aggregate or window`;
      return undefined;
    }
    case "A_Expr": {
      const parts = names(body.name);
      if (parts.length > 2 || (parts.length === 2 && parts[0] !== "pg_catalog")) {
        return `may not use operator "${printable(parts.join("."))}"`;
      }
      return undefined;
    }
    case "SQLValueFunction":
      return ALLOWED_VALUE_FUNCTIONS.has(String(body.op))
        ? undefined
        : `may not use ${printable(String(body.op).replace(/^SVFOP_/, ""))}`;
    case "TypeName": {
      const parts = names(body.names);
      const name = (parts.at(-1) ?? "").toLowerCase();
      const foreign = parts.length > 2 || (parts.length === 2 && parts[0] !== "pg_catalog");
      if (foreign || body.pct_type === true || REFUSED_TYPES.has(name) || name.startsWith("pg_")) {
        return `may not name the type "${printable(parts.join("."))}"`;
      }
      return undefined;
    }
  }
  return undefined;
}

/**
 * Checks a default for a column of type `typeSql` (a PostgreSQL type from types.ts): its
 * tree ({@link defaultProblem}), then that PostgreSQL turns its value into the type. Returns
 * the expression to write in DDL inside parentheses, or the problem. A failed probe aborts
 * a transaction, so inside one this runs on a `probing` session (database.ts).
 */
export async function checkDefault(
  session: Session,
  text: string,
  typeSql: string,
): Promise<string | { readonly problem: string }> {
  const problem = await defaultProblem(text);
  if (problem !== undefined) return { problem };
  // A line break ends a trailing `--` comment before the closing parenthesis; without one,
  // the text is the expression as written, so an unchanged default compares equal.
  const trimmed = text.trim();
  const expression = trimmed.includes("--") ? `${trimmed}\n` : trimmed;
  // Only allowed functions remain, so evaluating once is cheap and touches nothing.
  try {
    await session.rows(`SELECT CAST((${expression}) AS ${typeSql}) AS probe`);
    return expression;
  } catch (error) {
    const said = error instanceof Error ? error.message : String(error);
    return { problem: `is not a value of type ${typeSql}: ${printableMessage(said)}` };
  }
}
