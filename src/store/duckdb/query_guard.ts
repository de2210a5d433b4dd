/**
 * The read-only check of a client's SQL (`POST /api/v1/query`), decided on DuckDB's own parse
 * tree, never on the text: `json_serialize_sql` gives the tree, which serialises only SELECT
 * statements (anything else is "Only SELECT statements can be serialized"), so DDL, DML,
 * PRAGMA, SET, ATTACH, COPY, EXPORT, INSTALL, CALL, EXPLAIN and a statement hidden behind a
 * `;` never get as far as a tree.
 *
 * The walk over the tree fails closed: every expression class, table reference and query node
 * it meets must be one it knows, every function one of {@link ALLOWED_FUNCTIONS}, every table
 * an existing table or view of a schema the token may read. What passes is rewritten, and that
 * rewrite is what runs:
 * - every table is named in full (`"catalog"."schema"."table"`), so no search path, temporary
 *   table or system view can stand in for the one checked;
 * - every common table expression is renamed `name#n`, a name no table can have (the service's
 *   names are letters, digits and `_`), so a reference taken for a CTE can reach nothing else
 *   even where DuckDB's scoping differed from the walk's.
 * The rewritten text is parsed and checked once more, so what runs is what was checked.
 *
 * Run the returned `sql` with the client's parameters on a pooled connection of the hardened
 * instance (`enable_external_access=false`, `lock_configuration=true`, see database_open.ts)
 * as defence in depth: those stop files outside the spool directory and extensions even if
 * this check had a hole (query_hardening_test.ts shows what they do and do not stop). A
 * recursive CTE or a cross join that never ends is valid SQL and passes: a deadline has to
 * stop it, and with the configuration locked `SET statement_timeout` is refused, so that is
 * the connection's `interrupt()`.
 *
 * The rewrite keeps the query's meaning, not always its spelling: DuckDB names an unaliased
 * computed column after the expression's text, so such a column can come out named otherwise
 * (a subquery naming a renamed CTE, `INTERVAL 1 DAY`, a list comprehension). Aliased columns
 * and plain column references keep their names.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { printable } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import {
  ALLOWED_FUNCTIONS,
  ALLOWED_TABLE_FUNCTIONS,
  ALLOWED_WINDOW_FUNCTIONS,
} from "./query_functions.ts";
import { engineMessage } from "./sql.ts";
import { checkQueryText, tooDeep } from "../shared/query_bounds.ts";
import {
  checkOneStatement,
  checkReadableSchema,
  notAllowed,
  notAQuery,
  otherDatabase,
  type QueryScope as Scope,
  TablesRead,
  unsupported,
} from "../shared/query_rules.ts";
import { boundQuery, checkSizes } from "./query_bounds.ts";
import { isNode, type Node, parseTree, stringifyTree } from "./query_tree.ts";
import { type QueryCatalog, type QueryRunner, readQueryCatalog, rows } from "./query_catalog.ts";

/** Whom the query is checked for, and against what. */
export interface QueryScope extends Scope {
  /**
   * What the database holds, from {@link readQueryCatalog}; read afresh when absent. A caller
   * may keep one and read it again after DDL: listing the functions costs tens of
   * milliseconds, the rest well under one.
   */
  readonly catalog?: QueryCatalog;
}

/** A query that passed: the text to run in its place and the tables it reads. */
export interface CheckedQuery {
  /** The query rewritten with full table names and renamed CTEs; run this, not the original. */
  readonly sql: string;
  /** Each table or view read, once, as the catalogue spells it. */
  readonly tables: readonly TableRef[];
}

/**
 * Checks that `sql` is one read-only query over tables the scope may read, calling only
 * allowed functions, and returns the text to run in its place.
 *
 * @throws {ApiError} 400 for anything but exactly one query, a function or construct outside
 * the allowed ones, or a table that does not exist; 403 for a table of a schema the token may
 * not read, of the service's own or the engine's schemas, or of another database.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DuckDBInstance } from "@duckdb/node-api";
 * import { checkQuery } from "./query_guard.ts";
 *
 * const instance = await DuckDBInstance.create(":memory:");
 * const connection = await instance.connect();
 * await connection.run("CREATE SCHEMA public; CREATE TABLE public.t AS SELECT 1 AS x");
 * const checked = await checkQuery(connection, "SELECT sum(x) FROM t", {
 *   defaultSchema: "public",
 * });
 * assert.deepEqual(checked.tables, [{ schema: "public", name: "t" }]);
 * assert.equal(checked.sql, "SELECT sum(x) FROM memory.public.t");
 * await assert.rejects(checkQuery(connection, "DROP TABLE t", { defaultSchema: "public" }));
 * connection.closeSync();
 * instance.closeSync();
 * ```
 */
export async function checkQuery(
  runner: QueryRunner,
  sql: string,
  scope: QueryScope,
): Promise<CheckedQuery> {
  checkQueryText(sql);
  const tree = await serialize(runner, sql);
  const probes = tree.error === true ? [] : boundQuery(tree);
  const catalog = scope.catalog ?? await readQueryCatalog(runner);
  const first = new Walk(catalog, scope, false);
  first.statement(tree);
  await checkSizes(probes, (args, outer) => selectOf(runner, args, outer));

  const [rewritten] = await rows(runner, "SELECT json_deserialize_sql($1::JSON) AS sql", [
    stringifyTree(tree),
  ]).catch((error) => {
    throw ApiError.badRequest(`The query could not be checked: ${engineMessage(error)}`);
  });
  const text = String(rewritten?.sql);

  // What runs is the rewritten text: parse and check it again, strictly.
  const second = new Walk(catalog, scope, true);
  second.statement(await serialize(runner, text));
  if (JSON.stringify(second.tables.list()) !== JSON.stringify(first.tables.list())) {
    throw ApiError.badRequest("The query could not be checked: its rewrite reads other tables");
  }
  return { sql: text, tables: first.tables.list() };
}

/**
 * The one row of `outer` (SQL text with `{}` for a SELECT of `args`, named `x0`, `x1`, …):
 * how the size bounds evaluate arguments written in the query, each a constant expression
 * that passed the walk.
 */
async function selectOf(
  runner: QueryRunner,
  args: readonly Node[],
  outer: string,
): Promise<Record<string, unknown>> {
  const template = await serialize(runner, "SELECT 1");
  const statement = (template.statements as Node[])[0]!;
  (statement.node as Node).select_list = args.map((arg, i) => ({ ...arg, alias: `x${i}` }));
  const [inner] = await rows(runner, "SELECT json_deserialize_sql($1::JSON) AS sql", [
    stringifyTree(template),
  ]);
  const [row] = await rows(runner, outer.replace("{}", () => String(inner?.sql)), []).catch(
    (error) => {
      throw ApiError.badRequest(`The query failed: ${engineMessage(error)}`);
    },
  );
  return row ?? {};
}

/**
 * DuckDB's parse tree of `sql`. A parse error comes inside the tree; an engine failure is a
 * 400 too.
 */
async function serialize(runner: QueryRunner, sql: string): Promise<Node> {
  let found: Record<string, unknown>[];
  try {
    found = await rows(runner, "SELECT json_serialize_sql($1::VARCHAR) AS tree", [sql]);
  } catch (error) {
    throw ApiError.badRequest(`The query is not valid SQL: ${engineMessage(error)}`);
  }
  return parseTree(String(found[0]?.tree));
}

/** The expression classes a query may hold; any other (DEFAULT, a new one) is refused. */
const EXPRESSION_CLASSES: ReadonlySet<string> = new Set([
  "BETWEEN",
  "CASE",
  "CAST",
  "COLLATE",
  "COLUMN_REF",
  "COMPARISON",
  "CONJUNCTION",
  "CONSTANT",
  "FUNCTION",
  "LAMBDA",
  "LAMBDA_REF",
  "OPERATOR",
  "PARAMETER",
  "POSITIONAL_REFERENCE",
  "STAR",
  "SUBQUERY",
  "WINDOW",
]);

/** Query nodes: a SELECT, a set operation, a recursive CTE's union, a materialised CTE. */
const QUERY_NODES: ReadonlySet<string> = new Set([
  "SELECT_NODE",
  "SET_OPERATION_NODE",
  "RECURSIVE_CTE_NODE",
  "CTE_NODE",
]);

/** Table references that only combine or produce rows from what they contain. */
const PLAIN_TABLE_REFS: ReadonlySet<string> = new Set([
  "JOIN",
  "SUBQUERY",
  "EMPTY",
  "EXPRESSION_LIST",
  "PIVOT",
]);

/** CTEs visible at a point of the query: the name written (lower case) → the name it runs as. */
type Ctes = ReadonlyMap<string, string>;

/**
 * One walk over a statement's tree, checking it and (unless `strict`) rewriting it in place.
 * `strict` is for the rewritten text: every table must already be named in full and every
 * unqualified name must be a renamed CTE in scope.
 */
class Walk {
  /** The tables read. */
  readonly tables = new TablesRead<TableRef>();
  #ctes = 0;

  constructor(
    private readonly catalog: QueryCatalog,
    private readonly scope: QueryScope,
    private readonly strict: boolean,
  ) {}

  statement(tree: Node): void {
    if (tree.error === true) {
      const message = String(tree.error_message ?? "");
      if (/Only SELECT statements can be serialized/.test(message)) throw notAQuery();
      // DuckDB's parser stops at its own depth (1,000); the service's is lower.
      if (/Max expression depth limit/.test(message)) throw tooDeep();
      throw ApiError.badRequest(`The query is not valid SQL: ${engineMessage(message)}`);
    }
    const statements = Array.isArray(tree.statements) ? tree.statements : [];
    checkOneStatement(statements.length);
    const statement = statements[0];
    if (!isNode(statement) || !isNode(statement.node)) throw unsupported("statement");
    this.#queryNode(statement.node, new Map());
  }

  /** Anything: dispatches on what the object is, else looks inside it. */
  #any(value: unknown, scope: Ctes): void {
    if (Array.isArray(value)) {
      for (const item of value) this.#any(item, scope);
      return;
    }
    if (!isNode(value)) return;
    if (typeof value.class === "string") return this.#expression(value, scope);
    if (typeof value.type === "string") {
      if (value.type.endsWith("_NODE")) return this.#queryNode(value, scope);
      if (isTableRef(value)) return this.#tableRef(value, scope);
      if (value.type === "UNBOUND_TYPE_INFO") return this.#typeName(value);
    }
    this.#fields(value, scope);
  }

  #fields(node: Node, scope: Ctes, skip?: string): void {
    for (const [key, value] of Object.entries(node)) {
      if (key !== skip) this.#any(value, scope);
    }
  }

  #queryNode(node: Node, outer: Ctes): void {
    const type = String(node.type);
    if (!QUERY_NODES.has(type)) throw unsupported(type);
    const scope = new Map(outer);
    const ctes = isNode(node.cte_map) && Array.isArray(node.cte_map.map) ? node.cte_map.map : [];
    for (const entry of ctes) {
      if (!isNode(entry) || typeof entry.key !== "string" || !isNode(entry.value)) {
        throw unsupported("WITH");
      }
      const written = entry.key;
      const runsAs = this.strict ? written : `${written}#${++this.#ctes}`;
      const body = entry.value.query;
      // The body sees the CTEs before it, and itself only when recursive.
      const recursive = isNode(body) && isNode(body.node) &&
        body.node.type === "RECURSIVE_CTE_NODE";
      const bodyScope = new Map(scope);
      if (recursive) bodyScope.set(written.toLowerCase(), runsAs);
      this.#fields(entry.value, bodyScope);
      entry.key = runsAs;
      scope.set(written.toLowerCase(), runsAs);
    }
    if (type === "RECURSIVE_CTE_NODE" && typeof node.ctename === "string") {
      const runsAs = outer.get(node.ctename.toLowerCase());
      if (runsAs === undefined) throw unsupported("RECURSIVE");
      node.ctename = runsAs;
    }
    this.#fields(node, scope, "cte_map");
  }

  #expression(node: Node, scope: Ctes): void {
    const kind = String(node.class);
    if (!EXPRESSION_CLASSES.has(kind)) throw unsupported(kind);
    if (kind === "FUNCTION") this.#function(node, ALLOWED_FUNCTIONS, "function");
    if (kind === "WINDOW") this.#function(node, ALLOWED_WINDOW_FUNCTIONS, "window function");
    this.#fields(node, scope);
  }

  #function(node: Node, allowed: ReadonlySet<string>, what: string): void {
    const name = String(node.function_name ?? "");
    const schema = String(node.schema ?? "");
    const catalog = String(node.catalog ?? "");
    // The parser writes `main` itself for the functions it makes of syntax ([1, 2], EXTRACT).
    const plain = catalog === "" && (schema === "" || schema.toLowerCase() === "main");
    if (!plain || !allowed.has(name.toLowerCase())) {
      throw notAllowed(what, [catalog, schema, name].filter((part) => part !== "").join("."));
    }
    if (this.catalog.shadowing.has(name.toLowerCase())) {
      throw ApiError.badRequest(
        `The query calls ${what} "${
          printable(name)
        }", which a function defined in the database hides`,
      );
    }
  }

  #typeName(info: Node): void {
    if (String(info.catalog ?? "") !== "" || String(info.schema ?? "") !== "") {
      throw ApiError.badRequest(
        `The query names the type "${
          printable(String(info.name))
        }" in a schema; use built-in types`,
      );
    }
  }

  #tableRef(ref: Node, scope: Ctes): void {
    const type = String(ref.type);
    if (type === "BASE_TABLE") return this.#baseTable(ref, scope);
    if (type === "TABLE_FUNCTION") {
      const call = ref.function;
      if (!isNode(call) || call.class !== "FUNCTION") throw unsupported("table function");
      this.#function(call, ALLOWED_TABLE_FUNCTIONS, "table function");
      this.#fields(call, scope);
      this.#fields(ref, scope, "function");
      return;
    }
    if (type === "SHOW_REF") {
      // DESCRIBE or SUMMARIZE of a query describes only what that query reads; SHOW TABLES
      // and its kind (a name, no query) list the catalogue.
      if (ref.table_name !== "" || !isNode(ref.query)) throw unsupported("SHOW");
      return this.#fields(ref, scope);
    }
    if (!PLAIN_TABLE_REFS.has(type)) throw unsupported(type);
    // PIVOT ... IN enum_name reads a type's values by an unchecked name.
    if (type === "PIVOT" && Array.isArray(ref.pivots)) {
      for (const pivot of ref.pivots) {
        if (isNode(pivot) && typeof pivot.pivot_enum === "string" && pivot.pivot_enum !== "") {
          throw unsupported("PIVOT over the values of a type");
        }
      }
    }
    this.#fields(ref, scope);
  }

  #baseTable(ref: Node, scope: Ctes): void {
    const catalog = String(ref.catalog_name ?? "");
    const schema = String(ref.schema_name ?? "");
    const name = String(ref.table_name ?? "");
    if (ref.at_clause !== null && ref.at_clause !== undefined) throw unsupported("AT");
    this.#fields(ref, scope);
    if (catalog === "" && schema === "") {
      const cte = scope.get(name.toLowerCase());
      if (cte !== undefined) {
        if (this.strict) return;
        ref.table_name = cte;
        // `cte.column` keeps working under the new name.
        if (ref.alias === "") ref.alias = name;
        return;
      }
      if (this.strict) {
        throw ApiError.badRequest("The query could not be checked: its rewrite left a name open");
      }
    }
    if (catalog !== "" && catalog.toLowerCase() !== this.catalog.database.toLowerCase()) {
      throw otherDatabase(catalog);
    }
    if (this.strict && catalog === "") {
      throw ApiError.badRequest("The query could not be checked: its rewrite left a name open");
    }
    const table = this.#resolve(schema === "" ? this.scope.defaultSchema : schema, name);
    this.tables.add(table);
    ref.catalog_name = this.catalog.database;
    ref.schema_name = table.schema;
    ref.table_name = table.name;
  }

  /** The table `schema.name` as the catalogue spells it; 403 outside the scope, 400 absent. */
  #resolve(schema: string, name: string): TableRef {
    checkReadableSchema(schema, this.scope);
    const key = schema.toLowerCase();
    const table = this.catalog.tables.get(key)?.get(name.toLowerCase());
    if (table === undefined) {
      throw ApiError.badRequest(
        `The query reads "${printable(schema)}.${printable(name)}", which is not a table`,
      );
    }
    if (this.catalog.columnless.has(`${key}\u0000${name.toLowerCase()}`)) {
      throw ApiError.badRequest(
        `The query reads "${printable(table.schema)}.${
          printable(table.name)
        }", which has no columns; DuckDB cannot query a table without columns`,
      );
    }
    return table;
  }
}

/** Whether `node` is a table reference: every kind carries an alias, a sample and a location. */
function isTableRef(node: Node): boolean {
  return node.type === "BASE_TABLE" || node.type === "TABLE_FUNCTION" ||
    ("sample" in node && "query_location" in node && "alias" in node);
}
