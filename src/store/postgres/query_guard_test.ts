import assert from "node:assert/strict";
import { ApiError } from "../../errors.ts";
import { MAX_QUERY_LENGTH } from "../shared/query_bounds.ts";
import type { QueryScope } from "../shared/query_rules.ts";
import { checkPostgresQuery } from "./query_guard.ts";
import { type PostgresParser, withPostgresParser } from "./query_parser.ts";
import { HOSTILE } from "../../../tests/fixtures/query_catalogue.ts";
import { PG_HOSTILE } from "../../../tests/fixtures/postgres_query_catalogue.ts";
import { PG_LEGITIMATE } from "../../../tests/fixtures/postgres_query_legitimate.ts";

/** The parser, taken again after a test broke it. */
let parser: PostgresParser = await withPostgresParser((p) => p);

/** The tables of the catalogues' fixture: what the caller's existence check would find. */
const EXISTING = new Set([
  "public.orders",
  "public.customers",
  "public.events",
  "public.big_orders",
  "public.Mixed Case",
  "public.pg_report",
  "sales.targets",
  "secret.salaries",
]);

/**
 * DuckDB's hostile queries that are not hostile on PostgreSQL: `json_each` is PostgreSQL's own
 * reader of a JSON value (on DuckDB it is not an allowed table function).
 */
const HARMLESS_ON_POSTGRES = new Set([`SELECT * FROM json_each('{"a":1}')`]);

function scope(schemas?: readonly string[]): QueryScope {
  return { defaultSchema: "public", visibleSchemas: schemas };
}

function short(sql: string): string {
  const line = sql.replaceAll(/\s+/g, " ").trim();
  return line.length > 90 ? `${line.slice(0, 90)}…` : line;
}

/** The refusal of `sql`, or undefined when the guard passed it. */
function refusal(sql: string, schemas?: readonly string[]): ApiError | undefined {
  try {
    checkPostgresQuery(sql, scope(schemas), parser);
    return undefined;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

Deno.test("checkPostgresQuery() refuses each PostgreSQL-specific hostile query as expected", () => {
  assert.ok(PG_HOSTILE.length >= 60);
  const wrong = PG_HOSTILE.flatMap((hostile) => {
    const error = refusal(hostile.sql, hostile.schemas);
    const want = hostile.status ?? 400;
    if (error === undefined) return [`passed: ${hostile.why}: ${short(hostile.sql)}`];
    if (error.status !== want || !error.message.includes(hostile.says)) {
      return [
        `${error.status} (not ${want}) ${hostile.why}: ${short(hostile.sql)}: ${error.message}`,
      ];
    }
    return [];
  });
  assert.deepEqual(wrong, []);
});

Deno.test("checkPostgresQuery() refuses DuckDB's hostile catalogue, or names a table that does not exist", () => {
  const passed = HOSTILE.filter((hostile) => !HARMLESS_ON_POSTGRES.has(hostile.sql)).flatMap(
    (hostile) => {
      if (refusal(hostile.sql, hostile.schemas) !== undefined) return [];
      const { tables } = checkPostgresQuery(hostile.sql, scope(hostile.schemas), parser);
      // The caller answers 400 for a table that does not exist.
      if (tables.some((t) => !EXISTING.has(`${t.schema}.${t.name}`))) return [];
      return [`passed: ${hostile.why}: ${short(hostile.sql)}`];
    },
  );
  assert.deepEqual(passed, []);
  for (const sql of HARMLESS_ON_POSTGRES) assert.ok(HOSTILE.some((h) => h.sql === sql), sql);
});

Deno.test("checkPostgresQuery() passes each legitimate query with its tables and parameters", () => {
  assert.ok(PG_LEGITIMATE.length >= 40);
  const wrong = PG_LEGITIMATE.flatMap((legitimate) => {
    let checked;
    try {
      checked = checkPostgresQuery(legitimate.sql, scope(["public", "sales"]), parser);
    } catch (error) {
      return [`${legitimate.why}: ${short(legitimate.sql)}: ${(error as Error).message}`];
    }
    const tables = checked.tables.map((t) => `${t.schema}.${t.name}`);
    const missing = tables.filter((t) => !EXISTING.has(t));
    if (
      JSON.stringify(tables) !== JSON.stringify(legitimate.tables) ||
      checked.parameters !== (legitimate.parameters ?? 0) || missing.length > 0
    ) {
      return [`${legitimate.why}: ${short(legitimate.sql)}: read ${tables}, ${checked.parameters}`];
    }
    return [];
  });
  assert.deepEqual(wrong, []);
});

Deno.test("checkPostgresQuery() resolves an unqualified name to the default schema", () => {
  const checked = checkPostgresQuery("SELECT * FROM targets", { defaultSchema: "sales" }, parser);
  assert.deepEqual(checked.tables, [{ schema: "sales", name: "targets" }]);
  const denied = refusal("SELECT * FROM targets");
  assert.equal(denied, undefined);
  assert.throws(
    () =>
      checkPostgresQuery("SELECT 1 FROM targets", {
        defaultSchema: "sales",
        visibleSchemas: ["public"],
      }, parser),
    (error: ApiError) => error.status === 403 && /schema "sales"/.test(error.message),
  );
});

Deno.test("checkPostgresQuery() takes a CTE's name for a table where PostgreSQL would", () => {
  // A non-recursive CTE does not see itself or later ones: the name is a table there.
  const self = checkPostgresQuery(
    "WITH orders AS (SELECT * FROM orders) SELECT * FROM orders",
    scope(),
    parser,
  );
  assert.deepEqual(self.tables, [{ schema: "public", name: "orders" }]);
  const later = checkPostgresQuery(
    "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a",
    scope(),
    parser,
  );
  assert.deepEqual(later.tables, [{ schema: "public", name: "b" }]);
  // A CTE of a subquery is not in scope outside it.
  const outside = checkPostgresQuery(
    "SELECT * FROM (WITH s AS (SELECT 1) SELECT * FROM s) x, s",
    scope(),
    parser,
  );
  assert.deepEqual(outside.tables, [{ schema: "public", name: "s" }]);
  // A side of a set operation has CTEs of its own, and sees the statement's.
  const sides = checkPostgresQuery(
    "WITH o AS (SELECT 1) (WITH s AS (SELECT 1) SELECT * FROM s) UNION SELECT * FROM o",
    scope(),
    parser,
  );
  assert.deepEqual(sides.tables, []);
  // A CTE's name is matched exactly, as PostgreSQL folds it.
  const quoted = checkPostgresQuery('WITH "X" AS (SELECT 1) SELECT * FROM x', scope(), parser);
  assert.deepEqual(quoted.tables, [{ schema: "public", name: "x" }]);
});

Deno.test("checkPostgresQuery() refuses a query longer than its limit before parsing it", () => {
  const error = refusal(`SELECT 1 ${" ".repeat(MAX_QUERY_LENGTH)}`);
  assert.equal(error?.status, 400);
  assert.match(error!.message, /longer than/);
});

Deno.test("checkPostgresQuery() quotes the parser's message as it reads, without escapes", () => {
  assert.throws(() => checkPostgresQuery("FROM hr.h", scope(), parser), (error) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.message, 'The query is not valid SQL: syntax error at or near "FROM"');
    return true;
  });
});

Deno.test("checkPostgresQuery() refuses a NUL character before parsing", () => {
  const error = refusal("SELECT 1 AS s\u0000; DROP TABLE t");
  assert.equal(error?.status, 400);
  assert.match(error!.message, /NUL/);
});

Deno.test("checkPostgresQuery() refuses expressions, joins and set operations nested past 64", async () => {
  const deep = [
    `SELECT ${Array(5_000).fill("1").join("+")}`,
    `SELECT ${"abs(".repeat(990)}1${")".repeat(990)}`,
    `SELECT ${"NOT ".repeat(65)}true`,
    `SELECT 1${"::int".repeat(65)}`,
    `SELECT ${"CASE WHEN true THEN 1 ELSE ".repeat(65)}1${" END".repeat(65)}`,
    Array(65).fill("SELECT 1").join(" UNION "),
    `SELECT 1 FROM orders${" JOIN orders USING (id)".repeat(65)}`,
    `SELECT 1 FROM orders WHERE ${Array(70).fill("status").join(" || ")} = ''`,
    // Past the stack of the parser itself, which is then made anew.
    `SELECT ${Array(30_000).fill("1").join("+")}`,
  ];
  for (const sql of deep) {
    parser = await withPostgresParser((p) => p);
    const error = refusal(sql);
    assert.equal(error?.status, 400, sql.slice(0, 60));
    assert.match(error!.message, /more than 64 deep/, sql.slice(0, 60));
  }
  parser = await withPostgresParser((p) => p);
  // At the bound, each constant under 63 calls, operators or set operations is 64 deep.
  assert.equal(refusal(`SELECT ${"abs(".repeat(63)}1${")".repeat(63)}`), undefined);
  assert.equal(refusal(`SELECT ${Array(64).fill("1").join("+")}`), undefined);
  assert.equal(refusal(Array(64).fill("SELECT 1").join(" UNION ALL ")), undefined);
  assert.match(refusal(`SELECT ${"abs(".repeat(64)}1${")".repeat(64)}`)!.message, /64 deep/);
  assert.match(refusal(`SELECT ${Array(65).fill("1").join("+")}`)!.message, /64 deep/);
  // Many terms side by side are not deep.
  assert.equal(refusal(`SELECT ${Array(5_000).fill("1").join(", ")}`), undefined);
  assert.equal(refusal(`SELECT 1 WHERE ${Array(1_000).fill("true").join(" AND ")}`), undefined);
});
