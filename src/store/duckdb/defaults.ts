/**
 * Column defaults: exactly one scalar expression, checked by DuckDB's own parser.
 *
 * The expression text is handed to `json_serialize_sql` as a bound value, so it is parsed
 * but never run; only an expression whose parse tree is a single plain value passes, and
 * what reaches the table's DDL is DuckDB's own re-rendering of that tree (no comments, no
 * trailing text), never the request's characters.
 *
 * @module
 */

import type { Session } from "./database.ts";
import { engineMessage, quoteLiteral } from "./sql.ts";

/** Expression classes a default may not contain. */
// Column references are left to DuckDB: `current_date` parses as one and is fine.
const FORBIDDEN_CLASSES = new Set(["SUBQUERY", "STAR", "PARAMETER", "WINDOW", "DEFAULT", "LAMBDA"]);

/**
 * The functions a default may call: cheap, pure or clock- and randomness-based, and unable
 * to reach other objects. Sequences are off the list (a serial type makes a column's own),
 * as are settings (they would reveal paths) and anything that builds large values.
 */
const ALLOWED_FUNCTIONS = new Set([
  "now",
  "current_timestamp",
  "get_current_timestamp",
  "transaction_timestamp",
  "current_date",
  "today",
  "current_time",
  "get_current_time",
  "localtimestamp",
  "localtime",
  "gen_random_uuid",
  "uuid",
  "uuidv4",
  "uuidv7",
  "random",
  "make_date",
  "make_time",
  "make_timestamp",
  "make_timestamptz",
  "to_timestamp",
  "epoch_ms",
  "date_trunc",
  "date_part",
  "strftime",
  "strptime",
  "lower",
  "upper",
  "concat",
  "trim",
  "ltrim",
  "rtrim",
  "abs",
  "round",
  "floor",
  "ceil",
  "greatest",
  "least",
  "list_value",
  "struct_pack",
  "row",
  "map",
  "json_object",
  "json_array",
  "to_json",
  "json",
]);

/**
 * Checks a default expression for a column of the given type. Returns the expression as
 * DuckDB renders it, or the problem.
 */
export async function checkDefault(
  session: Session,
  text: string,
  typeSql: string,
): Promise<string | { readonly problem: string }> {
  // Tabs and line breaks are fine in an expression; other control characters are not.
  if (/[\p{Cc}]/u.test(text.replaceAll(/[\t\n\r]/g, ""))) {
    return { problem: "contains a control character" };
  }
  // json_serialize_sql only takes a constant, so the text travels as an escaped literal;
  // it is parsed, never run.
  const literal = quoteLiteral(`SELECT ${text}`);
  const [row] = await session.rows(`SELECT json_serialize_sql(${literal})::VARCHAR AS tree`);
  const tree = JSON.parse(row!.tree as string);
  if (tree.error) {
    const reason = String(tree.error_message).split("\n")[0]!;
    return {
      problem: /Only SELECT/.test(reason)
        ? `"${text}" must be exactly one scalar expression`
        : `"${text}" is not an expression: ${reason.replace(/^[A-Za-z ]*Error: /, "")}`,
    };
  }
  const shapeProblem = singleExpressionProblem(tree);
  if (shapeProblem) return { problem: `"${text}" ${shapeProblem}` };

  const [rendered] = await session.rows(
    `SELECT json_deserialize_sql(json_serialize_sql(${literal})) AS sql`,
  );
  const expression = plainBooleans(String(rendered!.sql).replace(/^SELECT /, ""));
  // Only allowed functions remain, so evaluating once is cheap and touches nothing.
  try {
    await session.rows(`SELECT CAST((${expression}) AS ${typeSql}) AS probe`);
  } catch (error) {
    return { problem: `"${text}" does not fit type ${typeSql}: ${engineMessage(error)}` };
  }
  return expression;
}

/** DuckDB's renderings of the literals `true` and `false`, and how they are written. */
const BOOLEAN_LITERALS: readonly (readonly [string, string])[] = [
  ["CAST('t' AS BOOLEAN)", "true"],
  ["CAST('f' AS BOOLEAN)", "false"],
];

/**
 * A default as DuckDB renders it, with its boolean literals written `true` and `false`:
 * DuckDB's parser turns them into `CAST('t' AS BOOLEAN)`, which is how its catalog and its
 * re-rendering give them back. Only outside quoted literals and names; the meaning is the
 * same, and the DDL takes either.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { plainBooleans } from "./defaults.ts";
 *
 * assert.equal(plainBooleans("(NOT CAST('f' AS BOOLEAN))"), "(NOT false)");
 * assert.equal(plainBooleans("'CAST(''t'' AS BOOLEAN)'"), "'CAST(''t'' AS BOOLEAN)'");
 * ```
 */
export function plainBooleans(sql: string): string {
  let out = "";
  for (let i = 0; i < sql.length;) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      // A quoted literal or name, its doubled quotes included, is copied as it is.
      let end = i + 1;
      while (end < sql.length && !(sql[end] === c && sql[end + 1] !== c)) {
        end += sql[end] === c ? 2 : 1;
      }
      out += sql.slice(i, end + 1);
      i = end + 1;
      continue;
    }
    const literal = BOOLEAN_LITERALS.find(([rendered]) => sql.startsWith(rendered, i));
    if (literal) {
      out += literal[1];
      i += literal[0].length;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

// deno-lint-ignore no-explicit-any
type Node = any;

function singleExpressionProblem(tree: Node): string | undefined {
  const statements = tree.statements as Node[];
  if (statements.length !== 1) return "must be exactly one expression";
  const node = statements[0].node;
  const plain = node.type === "SELECT_NODE" &&
    node.modifiers.length === 0 &&
    node.cte_map.map.length === 0 &&
    node.from_table.type === "EMPTY" &&
    node.where_clause === null &&
    node.group_expressions.length === 0 &&
    node.group_sets.length === 0 &&
    node.having === null &&
    node.sample === null &&
    node.qualify === null &&
    node.select_list.length === 1 &&
    node.select_list[0].alias === "" &&
    (statements[0].named_param_map ?? []).length === 0;
  if (!plain) return "must be exactly one scalar expression, without clauses or aliases";
  const forbidden = firstInTree(node.select_list[0], forbiddenClass);
  if (forbidden) {
    return `must be a scalar expression; it contains ${forbidden.toLowerCase().replace("_", " ")}`;
  }
  const called = firstInTree(node.select_list[0], disallowedCall);
  if (called !== undefined) {
    return called.startsWith("nextval") || called === "currval" || called === "setval"
      ? `may not call ${called}(); use the type serial or bigserial for a column drawing from a sequence`
      : `may not call ${called}(); defaults may use literals, operators, casts and simple functions such as now()`;
  }
  return undefined;
}

/**
 * The first answer of `test` in the tree, depth first: a node before what it holds, in the
 * order of its fields or items (an array is tested too; neither test here answers for one).
 */
function firstInTree(node: Node, test: (node: Node) => string | undefined): string | undefined {
  if (node === null || typeof node !== "object") return undefined;
  const here = test(node);
  if (here !== undefined) return here;
  for (const value of Object.values(node)) {
    const found = firstInTree(value, test);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The forbidden expression class `node` is, if any. */
function forbiddenClass(node: Node): string | undefined {
  if (typeof node.class === "string" && FORBIDDEN_CLASSES.has(node.class)) return node.class;
  if (node.type === "SELECT_NODE" || node.type === "SET_OPERATION_NODE") return "SUBQUERY";
  return undefined;
}

/** The function `node` calls, if it is neither an operator nor on the allowed list. */
function disallowedCall(node: Node): string | undefined {
  if (node.class !== "FUNCTION" || node.is_operator) return undefined;
  const name = String(node.function_name).toLowerCase();
  return node.schema || node.catalog || !ALLOWED_FUNCTIONS.has(name) ? name : undefined;
}
