import assert from "node:assert/strict";
import { type DuckDBConnection, DuckDBInstance, type DuckDBValue } from "@duckdb/node-api";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import fc from "npm:fast-check@^4.10.2";
import { ApiError } from "../../errors.ts";
import { MAX_QUERY_LENGTH } from "../shared/query_bounds.ts";
import { checkQuery, type QueryScope } from "./query_guard.ts";
import { readQueryCatalog } from "./query_catalog.ts";
import { HOSTILE, LEGITIMATE } from "../../../tests/fixtures/query_catalogue.ts";
import {
  ALLOWED_FUNCTIONS,
  ALLOWED_TABLE_FUNCTIONS,
  ALLOWED_WINDOW_FUNCTIONS,
} from "./query_functions.ts";

const SETUP = `
CREATE SCHEMA public; CREATE SCHEMA sales; CREATE SCHEMA secret; CREATE SCHEMA _table_service;
CREATE TABLE public.orders (id INTEGER, customer_id INTEGER, amount DECIMAL(10,2),
  created_at TIMESTAMP, status VARCHAR, tags VARCHAR[], meta JSON);
INSERT INTO public.orders VALUES
  (1, 1, 10.50, '2026-01-01 10:00', 'paid', ['a', 'b'], '{"k": 1}'),
  (2, 2, 200.00, '2026-02-01 11:00', 'open', [], '{"k": 2}'),
  (3, 1, NULL, '2026-02-03 12:00', 'paid', NULL, NULL);
CREATE TABLE public.customers (id INTEGER, name VARCHAR, country VARCHAR);
INSERT INTO public.customers VALUES (1, 'Ann', 'NO'), (2, 'Bo', 'SE'), (4, 'Cy', 'NO');
CREATE TABLE public.events ("at" TIMESTAMP, kind VARCHAR);
INSERT INTO public.events VALUES ('2026-01-15', 'x'), ('2026-03-01', 'y');
CREATE VIEW public.big_orders AS SELECT * FROM public.orders WHERE amount > 100;
CREATE TABLE sales.targets (region VARCHAR, target DOUBLE);
INSERT INTO sales.targets VALUES ('north', 1000);
CREATE TABLE secret.salaries (name VARCHAR, salary INTEGER);
CREATE TABLE _table_service.tables (id INTEGER, name VARCHAR);
CREATE TABLE main.leak (secret VARCHAR);
CREATE TYPE public.mood AS ENUM ('happy');
CREATE SEQUENCE public.s;
`;

/** One in-memory database for the whole file; `checker` has a temporary customers table. */
const instance = await DuckDBInstance.create(":memory:");
const checker = await instance.connect();
await checker.run(SETUP);
// A temporary table on the checking connection: the rewrite must not read it.
await checker.run("CREATE TEMP TABLE customers AS SELECT 'temporary' AS name");
// Macros hiding built-ins: one temporary on the checking connection, one in the database.
await checker.run("CREATE TEMP MACRO ucase(x) AS 'hidden'");
await checker.run("CREATE MACRO main.lcase(x) AS 'hidden'");
/** A clean connection whose search path is public: the original query's meaning. */
const reference = await instance.connect();
await reference.run("USE memory.public");
// Closed once every test of the file has run, whichever of them fail or are filtered out.
globalThis.addEventListener("unload", () => {
  checker.closeSync();
  reference.closeSync();
  instance.closeSync();
});

/** Read once: listing DuckDB's functions takes tens of milliseconds. */
const CATALOG = await readQueryCatalog(checker);
const ALL: QueryScope = { defaultSchema: "public", catalog: CATALOG };

function short(sql: string): string {
  const line = sql.replaceAll(/\s+/g, " ").trim();
  return line.length > 90 ? `${line.slice(0, 90)}…` : line;
}

async function refusal(sql: string, scope: QueryScope): Promise<ApiError> {
  try {
    const checked = await checkQuery(checker, sql, scope);
    assert.fail(`passed as ${checked.sql}`);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error;
  }
}

for (const hostile of HOSTILE) {
  Deno.test(`checkQuery() refuses ${hostile.why}: ${short(hostile.sql)}`, async () => {
    const scope = { ...ALL, ...(hostile.schemas ? { visibleSchemas: hostile.schemas } : {}) };
    const error = await refusal(hostile.sql, scope);
    assert.equal(error.status, hostile.status ?? 400, error.message);
  });
}

Deno.test("the hostile catalogue holds at least 200 queries", () => {
  assert.ok(HOSTILE.length >= 200, `${HOSTILE.length}`);
  assert.equal(new Set(HOSTILE.map((h) => `${h.sql}|${h.schemas}`)).size, HOSTILE.length);
});

/** The rows as text, sorted: without ORDER BY their order is DuckDB's choice. */
function rowsText(rows: unknown[]): string {
  const text = (row: unknown) =>
    JSON.stringify(row, (_key, value) => typeof value === "bigint" ? `${value}n` : value);
  return JSON.stringify(rows.map(text).sort());
}

async function run(connection: DuckDBConnection, sql: string, params: readonly DuckDBValue[]) {
  const reader = await connection.runAndReadAll(sql, params.length > 0 ? [...params] : undefined);
  return { columns: reader.columnNames(), rows: rowsText(reader.getRowsJS()) };
}

/** Queries whose rows change from one run to the next. */
const VOLATILE = /now\(\)|uuid|current_|SAMPLE/i;

for (const legitimate of LEGITIMATE) {
  Deno.test(`checkQuery() passes ${legitimate.why}: ${short(legitimate.sql)}`, async () => {
    const checked = await checkQuery(checker, legitimate.sql, ALL);
    const params = legitimate.params ?? [];
    const rewritten = await run(checker, checked.sql, params);
    const original = await run(reference, legitimate.sql, params);
    if (legitimate.renamesColumns) {
      assert.equal(rewritten.columns.length, original.columns.length);
      assert.notDeepEqual(rewritten.columns, original.columns, "names now kept: drop the note");
    } else assert.deepEqual(rewritten.columns, original.columns);
    if (!VOLATILE.test(legitimate.sql)) assert.equal(rewritten.rows, original.rows);
    assert.doesNotMatch(rewritten.rows, /temporary/);
  });
}

Deno.test("the legitimate catalogue holds at least 40 queries", () => {
  assert.ok(LEGITIMATE.length >= 40, `${LEGITIMATE.length}`);
});

Deno.test("checkQuery() names every table a query reads, once, as the catalogue spells it", async () => {
  const checked = await checkQuery(
    checker,
    `WITH x AS (SELECT * FROM ORDERS) SELECT * FROM x, Sales.Targets, public.orders o2,
       (SELECT 1 FROM big_orders)`,
    ALL,
  );
  assert.deepEqual(checked.tables, [
    { schema: "public", name: "big_orders" },
    { schema: "public", name: "orders" },
    { schema: "sales", name: "targets" },
  ]);
});

Deno.test("checkQuery() names every table in full and renames CTEs in what it returns", async () => {
  const checked = await checkQuery(checker, "WITH x AS (SELECT * FROM orders) FROM x", ALL);
  assert.equal(
    checked.sql,
    'WITH "x#1" AS (SELECT * FROM memory.public.orders)SELECT * FROM "x#1" AS x',
  );
});

Deno.test("checkQuery() reads unqualified names in the given default schema", async () => {
  const checked = await checkQuery(checker, "SELECT * FROM targets", { defaultSchema: "sales" });
  assert.deepEqual(checked.tables, [{ schema: "sales", name: "targets" }]);
  const error = await refusal("SELECT * FROM orders", { defaultSchema: "sales" });
  assert.equal(error.status, 400);
});

Deno.test("checkQuery() lets a claim of several schemas join across them", async () => {
  const checked = await checkQuery(
    checker,
    "SELECT * FROM orders, sales.targets",
    { defaultSchema: "public", visibleSchemas: ["public", "SALES"] },
  );
  assert.equal(checked.tables.length, 2);
});

Deno.test("checkQuery() refuses 403 a schema outside the claim even when it does not exist", async () => {
  const error = await refusal("SELECT * FROM ghost.t", { ...ALL, visibleSchemas: ["public"] });
  assert.equal(error.status, 403);
  assert.match(error.message, /may not read schema "ghost"/);
});

Deno.test("checkQuery() says which function it refuses", async () => {
  const error = await refusal("SELECT getenv('HOME')", ALL);
  assert.match(error.message, /calls function "getenv", which is not allowed/);
});

Deno.test("checkQuery() says which table function it refuses", async () => {
  const error = await refusal("SELECT * FROM read_csv('/etc/passwd')", ALL);
  assert.match(error.message, /calls table function "read_csv", which is not allowed/);
});

Deno.test("checkQuery() says a write is not a query", async () => {
  const error = await refusal("DELETE FROM orders", ALL);
  assert.match(error.message, /Only a single read-only query is allowed/);
});

Deno.test("checkQuery() passes DuckDB's syntax error on", async () => {
  const error = await refusal("SELECT FROM WHERE", ALL);
  assert.match(error.message, /^The query is not valid SQL: /);
});

Deno.test("checkQuery() refuses a query longer than its limit before parsing it", async () => {
  const error = await refusal(`SELECT ${"1+".repeat(MAX_QUERY_LENGTH)}1`, ALL);
  assert.match(error.message, /longer than/);
});

Deno.test("checkQuery() refuses nesting deeper than 64, in the text or the tree", async () => {
  for (
    const sql of [
      `SELECT ${"abs(".repeat(2000)}1${")".repeat(2000)}`,
      `SELECT * FROM ${"(SELECT * FROM ".repeat(600)}orders${") s".repeat(600)}`,
      `SELECT ${"(".repeat(20_000)}1${")".repeat(20_000)}`,
      `SELECT ${Array(2000).fill("1").join(" + ")}`,
    ]
  ) {
    const error = await refusal(sql, ALL);
    assert.match(error.message, /^The query nests expressions more than 64 deep/);
  }
});

Deno.test("checkQuery() walks nesting 60 deep", async () => {
  const checked = await checkQuery(checker, `SELECT ${"abs(".repeat(60)}1${")".repeat(60)}`, ALL);
  assert.ok(checked.sql.startsWith("SELECT abs(abs("));
});

Deno.test("checkQuery() keeps a constant beyond 2^53 exact in the rewrite", async () => {
  const checked = await checkQuery(checker, "SELECT 9007199254740993 = 9007199254740992", ALL);
  const [[equal]] = (await checker.runAndReadAll(checked.sql)).getRowsJS() as [[boolean]];
  assert.equal(equal, false);
});

Deno.test("checkQuery() passes a constant beyond DOUBLE's range, and it means the same", async () => {
  // json_serialize_sql writes 1e400 as a bare Infinity, which is not JSON.
  const sql = `SELECT 1e400 AS x, -1e400 AS y, 'a":Infinity,NaN \\" -Infinity' AS z`;
  const checked = await checkQuery(checker, sql, ALL);
  const rows = (await checker.runAndReadAll(checked.sql)).getRowsJS();
  assert.deepEqual(rows, [[Infinity, -Infinity, 'a":Infinity,NaN \\" -Infinity']]);
});

Deno.test("checkQuery() passes a non-finite constant cast to another type", async () => {
  const checked = await checkQuery(checker, "SELECT 1e400::numeric AS x", ALL);
  await assert.rejects(checker.runAndReadAll(checked.sql), /Could not cast value inf to DECIMAL/);
});

Deno.test("readQueryCatalog() lists the database's tables and views, no temporary ones", () => {
  assert.equal(CATALOG.database, "memory");
  assert.deepEqual([...CATALOG.tables.get("public")!.keys()].sort(), [
    "big_orders",
    "customers",
    "events",
    "orders",
  ]);
  assert.ok(CATALOG.tables.has("_table_service"), "the guard, not the list, refuses it");
});

Deno.test("readQueryCatalog() lists the macros that hide built-ins, temporary ones too", () => {
  assert.ok(CATALOG.shadowing.has("ucase"));
  assert.ok(CATALOG.shadowing.has("lcase"));
  assert.ok(!CATALOG.shadowing.has("upper"));
});

Deno.test("checkQuery() reads the catalogue itself when given none", async () => {
  const checked = await checkQuery(checker, "SELECT count(*) FROM orders", {
    defaultSchema: "public",
  });
  assert.deepEqual(checked.tables, [{ schema: "public", name: "orders" }]);
  const error = await refusal("SELECT ucase('a')", { defaultSchema: "public" });
  assert.match(error.message, /"ucase", which a function defined in the database hides/);
});

Deno.test("checkQuery() takes a Session-like runner", async () => {
  const runner = {
    rows: async (sql: string, values?: DuckDBValue[]) =>
      (await checker.runAndReadAll(sql, values)).getRowObjectsJS(),
  };
  const checked = await checkQuery(runner, "SELECT count(*) FROM orders", ALL);
  assert.deepEqual(checked.tables, [{ schema: "public", name: "orders" }]);
});

const functions = (await checker.runAndReadAll(
  `SELECT DISTINCT function_name AS name, function_type AS type FROM duckdb_functions()`,
)).getRowObjectsJS() as { name: string; type: string }[];
const known = new Set(functions.map((f) => f.name.toLowerCase()));

Deno.test("every allowed function exists in DuckDB", () => {
  const missing = [...ALLOWED_FUNCTIONS, ...ALLOWED_WINDOW_FUNCTIONS, ...ALLOWED_TABLE_FUNCTIONS]
    // unnest is syntax, not a catalogue entry; -> is made a lambda or json_extract on binding.
    .filter((name) => !known.has(name) && name !== "unnest" && name !== "->");
  assert.deepEqual(missing, []);
});

Deno.test("no allowed function reads settings, files, the catalogue or runs SQL", () => {
  const suspicious =
    /^(read_|parquet|glob|sniff|duckdb_|pragma|pg_|has_|current_(setting|schema|database|query|role|user|catalog)|getenv|getvariable|nextval|currval|setseed|query|json_(execute|serialize|deserialize)|sleep|write_log|__internal)/;
  assert.deepEqual([...ALLOWED_FUNCTIONS].filter((name) => suspicious.test(name)), []);
});

const SIMPLE_NAME = /^[a-z_][a-z0-9_]*$/i;
const refusedScalars = functions.filter((f) =>
  SIMPLE_NAME.test(f.name) && ["scalar", "aggregate", "macro"].includes(f.type) &&
  !ALLOWED_FUNCTIONS.has(f.name.toLowerCase())
);
const refusedTables = functions.filter((f) =>
  SIMPLE_NAME.test(f.name) && ["table", "table_macro"].includes(f.type) &&
  !ALLOWED_TABLE_FUNCTIONS.has(f.name.toLowerCase())
);

Deno.test(`checkQuery() refuses each of DuckDB's ${refusedScalars.length} other functions`, async () => {
  for (const { name } of refusedScalars) {
    const error = await refusal(`SELECT "${name}"(1)`, ALL);
    assert.equal(error.status, 400, name);
  }
});

Deno.test(`checkQuery() refuses each of DuckDB's ${refusedTables.length} other table functions`, async () => {
  for (const { name } of refusedTables) {
    const error = await refusal(`SELECT * FROM "${name}"()`, ALL);
    assert.equal(error.status, 400, name);
  }
});

/**
 * `sql` respelled without changing its meaning: each letter outside string literals in either
 * case, each run of spaces a space, a newline, a tab or a comment.
 */
function respell(
  sql: string,
  bits: readonly boolean[],
  gaps: readonly number[],
  comments = true,
): string {
  const GAPS = [" ", "\n", "\t", "  ", ...(comments ? ["/* x */ "] : [])];
  let out = "";
  let inString = false;
  let i = 0;
  for (const c of sql.replaceAll(/ +/g, " ")) {
    i++;
    if (c === "'") inString = !inString;
    if (inString) out += c;
    else if (c === " ") out += GAPS[gaps[i % gaps.length]! % GAPS.length];
    else out += bits[i % bits.length] ? c.toUpperCase() : c.toLowerCase();
  }
  return out;
}

const SPELLING = {
  bits: fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }),
  gaps: fc.array(fc.nat(), { minLength: 1, maxLength: 16 }),
};

Deno.test("checkQuery() refuses every hostile query however it is spelled", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...HOSTILE),
      SPELLING.bits,
      SPELLING.gaps,
      async (hostile, bits, gaps) => {
        const sql = respell(hostile.sql, bits, gaps);
        const scope = { ...ALL, ...(hostile.schemas ? { visibleSchemas: hostile.schemas } : {}) };
        const error = await refusal(sql, scope);
        assert.ok(error.status === 400 || error.status === 403, sql);
      },
    ),
    { numRuns: 400 },
  );
});

Deno.test("checkQuery() passes every legitimate query however it is spelled", async () => {
  await fc.assert(
    fc.asyncProperty(
      // Respelling a comment's spaces as newlines would end it early.
      fc.constantFrom(...LEGITIMATE.filter((l) => !/--|\/\*/.test(l.sql))),
      SPELLING.bits,
      SPELLING.gaps,
      async (legitimate, bits, gaps) => {
        // A comment beside a lambda's arrow makes DuckDB parse `t -> t <> 'b'` as
        // `(t -> t) <> 'b'`, which binds as written but not once printed back: a known gap.
        const sql = respell(legitimate.sql, bits, gaps, !legitimate.sql.includes("->"));
        const checked = await checkQuery(checker, sql, ALL);
        // A respelling DuckDB reads otherwise (a comment before a lambda's arrow makes it an
        // operator) may fail to bind: it must then fail as written too.
        const params = legitimate.params ?? [];
        const failure = (error: Error) => error.message.split("\n")[0];
        const rewritten = await run(checker, checked.sql, params).then(() => "ok", failure);
        const original = await run(reference, sql, params).then(() => "ok", failure);
        assert.equal(rewritten, original, sql);
      },
    ),
    { numRuns: 200 },
  );
});
