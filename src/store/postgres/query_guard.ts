/**
 * The read-only check of a client's SQL (`POST /api/v1/query`) for PostgreSQL, decided on
 * PostgreSQL's own grammar (libpg_query 15, the parser of the PostgreSQL 15 the engine runs,
 * as WebAssembly), never on the text. Pure: no connection, no catalogue. Why each rule:
 *
 * - Exactly one `SelectStmt` (SELECT, WITH, VALUES, TABLE, set operations): anything else
 *   changes or reveals the server. `SELECT … INTO` creates a table, `FOR UPDATE/SHARE` takes
 *   row locks and a data-modifying CTE (`WITH x AS (DELETE …)`) writes; all three parse as a
 *   SELECT, so each is looked for.
 * - The walk is generic and fails closed: every node of the tree, however deep, must be of a
 *   kind in {@link NODES}; a kind not listed (XMLTABLE, a new one of a later grammar) is
 *   refused rather than passed unread.
 * - Every function must be in {@link ALLOWED_FUNCTIONS} and unqualified, or `pg_catalog.x` where
 *   the parser wrote that for SQL's special forms (`EXTRACT`, `TRIM`): files, settings, the catalogue, sleeping
 *   and SQL-in-text (`query_to_xml`) are not. `CURRENT_USER` and its kin are refused; the clock
 *   is not.
 * - Types: `reg*` and `pg_*` types look names up in or describe the catalogue, and a type of a
 *   schema other than `pg_catalog` is not a built-in one; `%TYPE` reads a column's type.
 * - Tables: a database name (`db.schema.table`) is refused; a schema of PostgreSQL
 *   (`pg_catalog`, `information_schema`, `pg_toast`, any `pg_*`) or of the service
 *   ({@link RESERVED_SCHEMAS}), or one outside `visibleSchemas`, is 403. An unqualified name is
 *   a CTE in scope, or a table of `defaultSchema`; it may not begin with `pg_`, since
 *   PostgreSQL looks in `pg_catalog` before any schema of the search path.
 * - `?` is refused, not translated: PostgreSQL's placeholders are `$n`, and `?` is also a JSONB
 *   operator (`meta ? 'k'`), so which `?` was meant cannot be told from the text.
 * - Depth: a NUL character and brackets nested deeper than {@link MAX_EXPRESSION_DEPTH} are
 *   refused before the parser sees the text (`checkQueryText()`), expressions, joins and set
 *   operations nested deeper on the tree ({@link NESTING}); a tree too deep for the parser's
 *   own stack is refused the same way. PostgreSQL recurses over them without looking at the
 *   clock, and its stack ran out on `1+1+…+1` with 5,000 terms.
 *
 * The caller still has to: check that each returned table exists as a table or view, and read
 * it without its hidden column (query_tables.ts); run the text in `BEGIN READ ONLY` with
 * `SET LOCAL statement_timeout` and `SET LOCAL search_path = pg_catalog, "<defaultSchema>",
 * pg_temp` (the temporary schema last, else it is searched first), as a role without
 * superuser; a recursive CTE that never ends is valid SQL, and only the timeout stops it.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { printable, printableMessage } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import { checkQueryText, MAX_EXPRESSION_DEPTH, tooDeep } from "../shared/query_bounds.ts";
import {
  checkOneStatement,
  checkReadableSchema,
  notAllowed,
  notAQuery,
  otherDatabase,
  type QueryScope,
  TablesRead,
  unsupported,
} from "../shared/query_rules.ts";
import { ParserExhausted, type PostgresParser } from "./query_parser.ts";
import {
  ALLOWED_FUNCTIONS,
  ALLOWED_VALUE_FUNCTIONS,
  REFUSED_TYPES,
  SAMPLE_METHODS,
  SYNTAX_FUNCTIONS,
} from "./query_functions.ts";

/** One place a query names a table or view (not a CTE), as query_tables.ts rewrites it. */
export interface TableRead extends TableRef {
  /** The `RangeVar` as parsed: where the name is written, its alias, `ONLY`. */
  readonly node: Node;
  /** The `RangeTableSample` that samples it, when it is sampled. */
  readonly sample?: Node;
}

/** A query that passed: what it reads and how many parameters it takes. */
export interface CheckedPostgresQuery {
  /** Each table or view read, once, sorted; the caller checks that each exists. */
  readonly tables: readonly TableRef[];
  /** The highest `$n` the query names (0 for none): the count of parameters it binds. */
  readonly parameters: number;
  /** Every place the query names a table or view, in the order the walk met them. */
  readonly reads: readonly TableRead[];
  /** The statement's tree as the guard checked it. */
  readonly statement: Node;
}

/** Highest parameter number, the route's limit on `params`. */
export const MAX_PARAMETERS = 1_000;

/**
 * Checks that `sql` is one read-only query calling only allowed functions over tables of
 * schemas the scope may read, and says which tables it reads and how many parameters it has.
 * `parser` is query_parser.ts's, as `withPostgresParser()` gives it.
 *
 * @throws {ApiError} 400 for anything but exactly one query, a function, type or construct
 * outside the allowed ones, SQL PostgreSQL cannot parse, a NUL character, or expressions
 * nested deeper than {@link MAX_EXPRESSION_DEPTH} (`checkQueryText()` of
 * `../shared/query_bounds.ts` for brackets, the tree for the rest); 403 for a table of a
 * schema the token may not read, of PostgreSQL's or the service's own, or of another database.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkPostgresQuery } from "./query_guard.ts";
 * import { withPostgresParser } from "./query_parser.ts";
 *
 * const scope = { defaultSchema: "public" };
 * const check = (sql: string) => withPostgresParser((p) => checkPostgresQuery(sql, scope, p));
 * const checked = await check("SELECT sum(amount) FROM orders WHERE id > $1");
 * assert.deepEqual(checked.tables, [{ schema: "public", name: "orders" }]);
 * assert.equal(checked.parameters, 1);
 * await assert.rejects(check("SELECT pg_sleep(1)"));
 * await assert.rejects(check("SELECT 1" + "+1".repeat(64)), /more than 64 deep/);
 * ```
 */
export function checkPostgresQuery(
  sql: string,
  scope: QueryScope,
  parser: PostgresParser,
): CheckedPostgresQuery {
  checkQueryText(sql);
  const statements = parse(parser, sql);
  checkOneStatement(statements.length);
  const statement = isNode(statements[0]) ? statements[0].stmt : undefined;
  if (!isNode(statement) || !isNode(statement.SelectStmt)) throw notAQuery();
  const walk = new Walk(scope);
  walk.select(statement.SelectStmt, new Set(), 0);
  return { tables: walk.tables.list(), parameters: walk.parameters, reads: walk.reads, statement };
}

/** A parsed tree: plain JSON. */
export type Node = Record<string, unknown>;

/** Whether a value of a parsed tree is a node (an object), not a list or a scalar. */
export function isNode(value: unknown): value is Node {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function parse(parser: PostgresParser, sql: string): unknown[] {
  if (sql.trim() === "") return [];
  let tree: unknown;
  try {
    tree = parser.parseSync(sql);
  } catch (error) {
    // A tree too deep for the parser's stack: `1+1+…+1` nests without brackets.
    if (error instanceof ParserExhausted || error instanceof RangeError) throw tooDeep();
    if (!(error instanceof SyntaxError)) throw error;
    const hint = sql.includes("?") ? "; parameters are written $1, $2, …" : "";
    throw ApiError.badRequest(
      `The query is not valid SQL: ${printableMessage(error.message)}${hint}`,
    );
  }
  const statements = isNode(tree) ? tree.stmts : undefined;
  return Array.isArray(statements) ? statements : [];
}

/**
 * The node kinds a query may hold. The wrapper key of each node (`{"FuncCall": {...}}`) is its
 * kind; members written in lower case are fields, walked as they are.
 */
const NODES: ReadonlySet<string> = new Set([
  "A_ArrayExpr",
  "A_Const",
  "A_Expr",
  "A_Indices",
  "A_Indirection",
  "A_Star",
  "Alias",
  "BitString",
  "Boolean",
  "BooleanTest",
  "BoolExpr",
  "CaseExpr",
  "CaseWhen",
  "CoalesceExpr",
  "CollateClause",
  "ColumnDef",
  "ColumnRef",
  "CommonTableExpr",
  "CTECycleClause",
  "CTESearchClause",
  "Float",
  "FuncCall",
  "GroupingFunc",
  "GroupingSet",
  "Integer",
  "JoinExpr",
  "List",
  "MinMaxExpr",
  "NullTest",
  "ParamRef",
  "RangeFunction",
  "RangeSubselect",
  "RangeTableSample",
  "RangeVar",
  "ResTarget",
  "RowExpr",
  "SelectStmt",
  "SortBy",
  "SQLValueFunction",
  "String",
  "SubLink",
  "TypeCast",
  "TypeName",
  "WindowDef",
  "XmlSerialize",
]);

/** Statements a CTE may hold that write: named in the refusal. */
const WRITES: Readonly<Record<string, string>> = {
  InsertStmt: "INSERT",
  UpdateStmt: "UPDATE",
  DeleteStmt: "DELETE",
  MergeStmt: "MERGE",
};

/**
 * The node kinds that nest: each one inside another adds one to the depth
 * {@link MAX_EXPRESSION_DEPTH} bounds, as each expression does on DuckDB. A join and a set
 * operation (`UNION`) count too: like `1+1+…+1`, `a JOIN b JOIN c …` and `SELECT 1 UNION
 * SELECT 1 …` nest without brackets, and PostgreSQL's parser and planner recurse over them.
 */
const NESTING: ReadonlySet<string> = new Set([
  "A_ArrayExpr",
  "A_Const",
  "A_Expr",
  "A_Indirection",
  "BooleanTest",
  "BoolExpr",
  "CaseExpr",
  "CoalesceExpr",
  "CollateClause",
  "ColumnRef",
  "FuncCall",
  "GroupingFunc",
  "JoinExpr",
  "MinMaxExpr",
  "NullTest",
  "ParamRef",
  "RowExpr",
  "SQLValueFunction",
  "SubLink",
  "TypeCast",
  "XmlSerialize",
]);

/** The CTE names visible at a point of the query. */
type Scope = ReadonlySet<string>;

/**
 * One walk over a statement's tree, collecting tables and the highest parameter. `depth` is
 * how many {@link NESTING} nodes enclose the node walked.
 */
class Walk {
  readonly tables = new TablesRead();
  readonly reads: TableRead[] = [];
  parameters = 0;

  constructor(private readonly scope: QueryScope) {}

  /** Anything: each node by its kind, else every field. */
  #any(value: unknown, scope: Scope, depth: number): void {
    if (Array.isArray(value)) {
      for (const item of value) this.#any(item, scope, depth);
      return;
    }
    if (!isNode(value)) return;
    for (const [key, field] of Object.entries(value)) {
      if (/^[A-Z]/.test(key)) this.#node(key, field, scope, depth);
      else if (key === "typeName") this.#typeName(field, scope, depth);
      else this.#any(field, scope, depth);
    }
  }

  #node(kind: string, body: unknown, scope: Scope, outer: number): void {
    if (!NODES.has(kind) || !isNode(body)) throw unsupported(kind);
    const depth = NESTING.has(kind) ? outer + 1 : outer;
    if (depth > MAX_EXPRESSION_DEPTH) throw tooDeep();
    switch (kind) {
      case "SelectStmt":
        return this.select(body, scope, depth);
      case "RangeVar":
        return this.#rangeVar(body, scope, depth);
      case "FuncCall":
        this.#function(body.funcname);
        break;
      case "A_Expr":
        this.#operator(body.name);
        break;
      case "SQLValueFunction":
        if (!ALLOWED_VALUE_FUNCTIONS.has(String(body.op))) {
          throw ApiError.badRequest(
            `The query uses ${
              printable(String(body.op).replace(/^SVFOP_/, ""))
            }, which is not allowed`,
          );
        }
        break;
      case "TypeName":
        return this.#typeName(body, scope, depth);
      case "ParamRef":
        this.#parameter(body.number);
        break;
      case "RangeTableSample": {
        const method = names(body.method);
        const name = method.at(-1) ?? "";
        if (
          !SAMPLE_METHODS.has(name) || (method.length > 1 && method[0] !== "pg_catalog") ||
          method.length > 2
        ) {
          throw ApiError.badRequest(
            `The query samples with "${printable(method.join("."))}", which is not allowed`,
          );
        }
        // The grammar samples a named relation only: read it knowing it is sampled.
        const relation = isNode(body.relation) ? body.relation.RangeVar : undefined;
        if (!isNode(relation)) throw unsupported("TABLESAMPLE");
        for (const [key, field] of Object.entries(body)) {
          if (key !== "relation") this.#any(field, scope, depth);
        }
        return this.#rangeVar(relation, scope, depth, body);
      }
    }
    this.#any(body, scope, depth);
  }

  /**
   * A SELECT, VALUES or set operation, with the CTEs it defines in scope of all of it; a set
   * operation's sides one deeper than itself.
   */
  select(node: Node, outer: Scope, outerDepth: number): void {
    if (node.intoClause !== undefined) {
      throw ApiError.badRequest("The query uses SELECT … INTO, which creates a table");
    }
    if (node.lockingClause !== undefined) {
      throw ApiError.badRequest("The query uses FOR UPDATE or FOR SHARE, which locks rows");
    }
    const depth = node.op !== undefined && node.op !== "SETOP_NONE" ? outerDepth + 1 : outerDepth;
    if (depth > MAX_EXPRESSION_DEPTH) throw tooDeep();
    const scope = new Set(outer);
    const withClause = isNode(node.withClause) ? node.withClause : undefined;
    const ctes = withClause !== undefined && Array.isArray(withClause.ctes) ? withClause.ctes : [];
    const recursive = withClause?.recursive === true;
    const bodies: [Node, Scope][] = [];
    for (const entry of ctes) {
      const cte = isNode(entry) ? entry.CommonTableExpr : undefined;
      if (!isNode(cte) || typeof cte.ctename !== "string") throw unsupported("WITH");
      const query = isNode(cte.ctequery) ? cte.ctequery : {};
      const kind = Object.keys(query)[0] ?? "";
      if (kind in WRITES) {
        throw ApiError.badRequest(
          `The query's WITH "${printable(cte.ctename)}" runs ${WRITES[kind]}, which writes`,
        );
      }
      if (kind !== "SelectStmt") throw unsupported(kind || "WITH");
      // A body sees the CTEs before it; under RECURSIVE, every one (itself included).
      if (!recursive) bodies.push([cte, new Set(scope)]);
      scope.add(cte.ctename);
    }
    if (recursive) { for (const entry of ctes) bodies.push([entry.CommonTableExpr, scope]); }
    for (const [cte, seen] of bodies) this.#any(cte, seen, depth);
    for (const [key, field] of Object.entries(node)) {
      if (key === "withClause") continue;
      // A set operation's sides are SELECTs written without their kind, each with its CTEs.
      if ((key === "larg" || key === "rarg") && isNode(field)) this.select(field, scope, depth);
      else this.#any(field, scope, depth);
    }
  }

  #rangeVar(node: Node, scope: Scope, depth: number, sample?: Node): void {
    const catalog = typeof node.catalogname === "string" ? node.catalogname : "";
    const schema = typeof node.schemaname === "string" ? node.schemaname : "";
    const name = String(node.relname ?? "");
    if (catalog !== "") {
      throw otherDatabase(catalog);
    }
    this.#any(node, scope, depth);
    if (schema === "") {
      if (scope.has(name)) return;
      if (name.toLowerCase().startsWith("pg_")) {
        throw ApiError.forbidden(
          `The query may not read "${
            printable(name)
          }": PostgreSQL looks for it in its catalogue; name its schema`,
        );
      }
    }
    const resolved = schema === "" ? this.scope.defaultSchema : schema;
    // PostgreSQL's own schemas are `pg_catalog`, `pg_toast`, `pg_temp_n`...: any `pg_*`.
    checkReadableSchema(resolved, this.scope, (key) => key.startsWith("pg_"));
    this.tables.add({ schema: resolved, name });
    this.reads.push({ schema: resolved, name, node, ...(sample ? { sample } : {}) });
  }

  #function(funcname: unknown): void {
    const parts = names(funcname);
    const name = parts.at(-1) ?? "";
    const plain = parts.length === 1 ||
      (parts.length === 2 && parts[0] === "pg_catalog" && SYNTAX_FUNCTIONS.has(name));
    if (!plain || !ALLOWED_FUNCTIONS.has(name)) throw notAllowed("function", parts.join("."));
  }

  /** `OPERATOR(schema.op)`: only PostgreSQL's own. */
  #operator(name: unknown): void {
    const parts = names(name);
    if (parts.length > 2 || (parts.length === 2 && parts[0] !== "pg_catalog")) {
      throw ApiError.badRequest(
        `The query uses operator "${printable(parts.join("."))}", which is not allowed`,
      );
    }
  }

  #typeName(value: unknown, scope: Scope, depth: number): void {
    if (!isNode(value)) throw unsupported("a type");
    const parts = names(value.names);
    const name = parts.at(-1) ?? "";
    const foreign = parts.length > 2 || (parts.length === 2 && parts[0] !== "pg_catalog");
    if (
      foreign || value.pct_type === true || REFUSED_TYPES.has(name.toLowerCase()) ||
      name.toLowerCase().startsWith("pg_")
    ) {
      throw ApiError.badRequest(
        `The query names the type "${printable(parts.join("."))}", which is not allowed`,
      );
    }
    this.#any(value, scope, depth);
  }

  #parameter(written: unknown): void {
    // The tree leaves out a field that is zero: `$0` has no number.
    const number = typeof written === "number" ? written : 0;
    if (!Number.isInteger(number) || number < 1 || number > MAX_PARAMETERS) {
      throw ApiError.badRequest(
        `The query names parameter $${number}; parameters are $1 to $${MAX_PARAMETERS}`,
      );
    }
    this.parameters = Math.max(this.parameters, number);
  }
}

/** The text of a list of `String` nodes: a qualified name. */
function names(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((item) =>
    isNode(item) && isNode(item.String) ? String(item.String.sval ?? "") : "?"
  );
}
