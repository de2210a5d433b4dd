import assert from "node:assert/strict";
import { DuckDBInstance } from "@duckdb/node-api";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import fc from "npm:fast-check@^4.10.2";
import { ApiError } from "../../errors.ts";
import { checkQuery, type QueryScope } from "./query_guard.ts";
import { readQueryCatalog } from "./query_catalog.ts";
import { MAX_EXPRESSION_DEPTH } from "../shared/query_bounds.ts";
import { MAX_BUILT_LIST, MAX_BUILT_TEXT, MAX_LAMBDA_DEPTH } from "./query_bounds.ts";

const instance = await DuckDBInstance.create(":memory:");
const connection = await instance.connect();
await connection.run(
  "CREATE SCHEMA public; CREATE TABLE public.t (s VARCHAR, n INTEGER); " +
    "INSERT INTO public.t VALUES ('abc', 3)",
);
const SCOPE: QueryScope = {
  defaultSchema: "public",
  catalog: await readQueryCatalog(connection),
};

async function refused(sql: string): Promise<string> {
  try {
    await checkQuery(connection, sql, SCOPE);
  } catch (error) {
    assert.ok(error instanceof ApiError, `${sql}: ${error}`);
    assert.equal(error.status, 400, `${sql}: ${error.message}`);
    return error.message;
  }
  assert.fail(`${sql} passed the bounds`);
}

function nest(depth: number, wrap: (inner: string) => string, base: string): string {
  let sql = base;
  for (let i = 0; i < depth; i++) sql = wrap(sql);
  return sql;
}

Deno.test("checkQuery() refuses, naming the bound, each query DuckDB cannot interrupt", async (t) => {
  const cases: [string, string, RegExp][] = [
    ["a text of 1e9 characters", "SELECT length(repeat('x', 1e9))", /text longer than 1000000/],
    ["a list of 2e7 elements", "SELECT len(list_resize([1], 20000000))", /list longer than/],
    ["a range of 1e7", "SELECT len(range(10000000))", /range\(\) for a list longer/],
    [
      "a series of seconds",
      "SELECT len(generate_series(TIMESTAMP '1970-01-01', TIMESTAMP '2100-01-01', INTERVAL 1 SECOND))",
      /generate_series/,
    ],
    ["a padded text", "SELECT lpad('x', 2000000000, 'y')", /lpad/],
    ["a list repeated", "SELECT repeat(range(100000), 100000)", /list longer/],
    ["a nested size", "SELECT range(length(repeat('x', 1e12)))", /repeat/],
    ["a format width", "SELECT printf('%0999999999d', 1)", /printf/],
    ["990 nested lists", `SELECT ${nest(990, (s) => `[${s}]`, "1")}`, /64 deep/],
    ["990 nested abs()", `SELECT ${nest(990, (s) => `abs(${s})`, "1")}`, /64 deep/],
    ["5,000 terms", `SELECT ${Array(5000).fill("1").join("+")}`, /64 deep/],
    [
      "40 nested lambdas",
      `SELECT ${nest(40, (s) => `list_transform([1], x -> ${s})`, "x")}`,
      new RegExp(`lambdas more than ${MAX_LAMBDA_DEPTH}`),
    ],
    ["a width given as an argument", "SELECT format('{:>{}}', 'x', 10000000)", /format/],
    ["a printf width as an argument", "SELECT printf('%*d', 10000000, 1)", /printf/],
    ["widths that add up", "SELECT format('{:>999999}{:>999999}', 'a', 'b')", /format/],
    ["a size through random()", "SELECT range(CAST(random() * 0 + 1e7 AS BIGINT))", /range/],
    ["a fixed-size array repeated", "SELECT repeat([1, 2, 3]::INTEGER[3], 50000)", /list/],
    ["a text of dollars", "SELECT repeat('$$', 1000000)", /text longer/],
    ["LIKE under COLLATE", "SELECT 'a_c' COLLATE nocase LIKE 'A_C'", /COLLATE/],
    ["a multi-byte ESCAPE", "SELECT 'a' LIKE 'a' ESCAPE 'é'", /single ASCII/],
    [
      "an edit distance of long texts",
      "SELECT levenshtein(repeat('a', 40000), repeat('b', 40000))",
      /levenshtein/,
    ],
    ["a GLOB on a column", "SELECT 'a' GLOB s FROM t", /GLOB/],
    ["an ESCAPE on a column", "SELECT 'a' LIKE s ESCAPE '!' FROM t", /ESCAPE/],
  ];
  for (const [name, sql, message] of cases) {
    await t.step(name, async () => assert.match(await refused(sql), message));
  }
});

Deno.test("checkQuery() passes queries just within each bound", async () => {
  for (
    const sql of [
      `SELECT length(repeat('x', ${MAX_BUILT_TEXT}))`,
      `SELECT len(range(${MAX_BUILT_LIST}))`,
      `SELECT len(generate_series(1, ${MAX_BUILT_LIST}))`,
      "SELECT len(range(DATE '2000-01-01', DATE '2100-01-01', INTERVAL 1 DAY))",
      `SELECT ${nest(MAX_EXPRESSION_DEPTH - 2, (s) => `abs(${s})`, "1")}`,
      `SELECT ${nest(MAX_LAMBDA_DEPTH, (s) => `list_transform([1], x -> ${s})`, "x")}`,
      "SELECT repeat(s, n), lpad(s, n, '.') FROM t",
      "SELECT count(*) FROM range(1000000000000) LIMIT 0",
      "SELECT printf('Order 12345678: %s', 'a'), format('Total {} of 10000000', 5)",
      "SELECT repeat('$`', 20000), repeat(['a,b,c,d'], 30000)",
      "SELECT 'ABC' COLLATE nocase LIKE 'a%'",
      "SELECT '😀' GLOB '[😀-🙏]'",
      "SELECT levenshtein(repeat('a', 1000), 'b'), levenshtein(s, 'abd') FROM t",
      "SELECT * FROM generate_series(1, 1000000000000) LIMIT 1",
    ]
  ) {
    const { sql: rewritten } = await checkQuery(connection, sql, SCOPE);
    await connection.run(rewritten);
  }
});

/** What DuckDB's own matcher answers for `expr` over `s` and `p`, and what the rewrite does. */
async function both(expr: string, s: string, p: string): Promise<[unknown, unknown]> {
  const sql = `SELECT ${expr} AS m FROM (SELECT $1::VARCHAR AS s, $2::VARCHAR AS p)`;
  const { sql: rewritten } = await checkQuery(connection, sql, SCOPE);
  const read = async (text: string) =>
    (await connection.runAndReadAll(text, [s, p])).getRowObjectsJS()[0]?.m;
  return [await read(sql), await read(rewritten)];
}

Deno.test("checkQuery() rewrites LIKE, ILIKE and GLOB to RE2 with their meaning kept", async () => {
  const alphabet = fc.constantFrom(
    "a",
    "b",
    "A",
    "%",
    "_",
    "*",
    "?",
    ".",
    "\\",
    "[",
    "]",
    "!",
    "é",
  );
  const text = fc.array(alphabet, { maxLength: 6 }).map((cs) => cs.join(""));
  await fc.assert(
    fc.asyncProperty(text, text, async (s, p) => {
      // ASCII strings: DuckDB's own `_` and `?` take one byte, the rewrite one character.
      if (/é/.test(s + p)) return;
      for (const expr of ["s LIKE p", "s NOT LIKE p", "s ILIKE p", "s NOT ILIKE p"]) {
        const [want, got] = await both(expr, s, p);
        assert.equal(got, want, `${JSON.stringify(s)} ${expr} ${JSON.stringify(p)}`);
      }
    }),
    { numRuns: 300 },
  );
  const literals: [string, string][] = [
    ["a_c", "abc"],
    ["a%", "abc"],
    ["%b%", "abc"],
    ["A%", "abc"],
    ["100!%", "100%"],
    ["*.csv", "x.csv"],
    ["[!a-c]x", "dx"],
    ["[]]", "]"],
    ["a\\*", "a*"],
    ["[a", "["],
    ["Xabc", "abc"],
    ["A", "a"],
  ];
  for (const [p, s] of literals) {
    for (
      const expr of [
        `s LIKE '${p}'`,
        `s ILIKE '${p}'`,
        `s GLOB '${p}'`,
        `s LIKE '${p}' ESCAPE '!'`,
        `s ILIKE '${p}' ESCAPE 'X'`,
        `s ILIKE '${p}' ESCAPE 'A'`,
      ]
    ) {
      const [want, got] = await both(expr, s, "");
      assert.equal(got, want, `${JSON.stringify(s)} ${expr}`);
    }
  }
});

Deno.test("checkQuery() makes a backtracking pattern over a long text a linear match", async () => {
  const { sql } = await checkQuery(
    connection,
    "SELECT repeat('a', 100000) LIKE $1 AS m, repeat('a', 100000) GLOB '*a*a*a*a*a*a*b' AS g",
    SCOPE,
  );
  const rows = (await connection.runAndReadAll(sql, ["%a%a%a%a%a%a%a%a%a%a%b"])).getRowObjectsJS();
  assert.deepEqual(rows, [{ m: false, g: false }]);
});

globalThis.addEventListener("unload", () => {
  connection.closeSync();
  instance.closeSync();
});
