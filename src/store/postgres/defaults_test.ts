import assert from "node:assert/strict";
import { defaultProblem } from "./defaults.ts";

Deno.test("defaultProblem() takes one scalar expression of literals, operators, casts and simple functions", async () => {
  for (
    const text of [
      "'abc'",
      "42",
      "-1.5e3",
      "1 + 2 * 3",
      "'x' || 'y'",
      "now()",
      "current_date",
      "CURRENT_TIMESTAMP(3)",
      "gen_random_uuid()",
      "true",
      "NULL",
      "'{}'::jsonb",
      "ARRAY[1, 2]",
      "coalesce(NULL, 1)",
      "greatest(1, 2)",
      "CASE WHEN random() > 0.5 THEN 1 ELSE 2 END",
      "date_trunc('day', now())",
      "trim(' x ')",
      "lower('X') -- a comment",
      "now() AT TIME ZONE 'UTC'",
      "extract(year FROM now())",
    ]
  ) {
    assert.equal(await defaultProblem(text), undefined, text);
  }
});

Deno.test("defaultProblem() refuses statements, clauses, references, sequences, settings and aggregates", async () => {
  for (
    const text of [
      "1; DROP TABLE users",
      "1;",
      "(SELECT 1)",
      "1 FROM users",
      "*",
      "c",
      "$1",
      "1, 2",
      "1 AS x",
      "sum(1)",
      "count(*)",
      "lower('x') FILTER (WHERE true)",
      "",
      "   ",
      "1 WHERE true",
      "1 UNION SELECT 2",
      "row_number() OVER ()",
      "nextval('no_such_sequence')",
      "1 -- \n, evil integer",
      "'unterminated",
      "current_setting('temp_directory')",
      "length(repeat('x', 200000000))",
      "pg_catalog.now()",
      "main.now()",
      "1::regclass",
      "'x'::public.thing",
      "current_user",
      "1 OPERATOR(public.+) 1",
      "EXISTS (SELECT 1)",
      "1 IN (SELECT 1)",
      "'a\u0000'",
      "1 /* unterminated",
      `'${"x".repeat(5000)}'`,
    ]
  ) {
    assert.notEqual(await defaultProblem(text), undefined, text);
  }
});
