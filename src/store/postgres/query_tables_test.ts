import assert from "node:assert/strict";
import { PG_LEGITIMATE } from "../../../tests/fixtures/postgres_query_legitimate.ts";
import { ApiError } from "../../errors.ts";
import { type CheckedPostgresQuery, checkPostgresQuery } from "./query_guard.ts";
import { withPostgresParser } from "./query_parser.ts";
import { MAX_REWRITTEN_LENGTH, tableKey, withoutHiddenColumns } from "./query_tables.ts";

const parser = await withPostgresParser((p) => p);

/** `sql` rewritten as if every table it reads had the columns `n` and `s`. */
function rewritten(sql: string, columns = ["n", "s"]): string {
  const checked = checkPostgresQuery(sql, { defaultSchema: "public" }, parser);
  const visible = new Map(checked.tables.map((t) => [tableKey(t), columns]));
  return withoutHiddenColumns(sql, checked, visible, parser);
}

const COLUMNS = `SELECT "n", "s" FROM`;

Deno.test("withoutHiddenColumns() reads each table through a subquery under its own name", () => {
  const cases: [string, string][] = [
    ["SELECT z FROM z", `SELECT z FROM (${COLUMNS} "public"."z") AS "z"`],
    ["SELECT * FROM public . z y", `SELECT * FROM (${COLUMNS} "public"."z") y`],
    ["TABLE z", `SELECT * FROM (${COLUMNS} "public"."z") AS "z"`],
    [
      "SELECT 1 UNION TABLE ONLY z",
      `SELECT 1 UNION SELECT * FROM (${COLUMNS} ONLY "public"."z") AS "z"`,
    ],
    ["SELECT * FROM ONLY (z) x", `SELECT * FROM (${COLUMNS} ONLY "public"."z") x`],
    ["SELECT * FROM z *", `SELECT * FROM (${COLUMNS} "public"."z") AS "z"`],
    [
      "SELECT * FROM z AS y(a, b) TABLESAMPLE system ($1) REPEATABLE (2) WHERE a > $2",
      `SELECT * FROM (${COLUMNS} "public"."z" TABLESAMPLE system ($1) REPEATABLE (2)) ` +
      "AS y(a, b)  WHERE a > $2",
    ],
    [
      `SELECT 'é', "ü".n FROM/* a */"ü"-- b`,
      `SELECT 'é', "ü".n FROM/* a */(${COLUMNS} "public"."ü") AS "ü"-- b`,
    ],
    [
      "WITH c AS (SELECT * FROM z) SELECT to_json(c) FROM c JOIN w ON true",
      `WITH c AS (SELECT * FROM (${COLUMNS} "public"."z") AS "z") SELECT to_json(c) FROM c ` +
      `JOIN (${COLUMNS} "public"."w") AS "w" ON true`,
    ],
  ];
  for (const [sql, expected] of cases) assert.equal(rewritten(sql), expected, sql);
  assert.equal(rewritten("SELECT 1 AS x"), "SELECT 1 AS x");
  assert.equal(
    rewritten("SELECT * FROM z", []),
    'SELECT * FROM (SELECT  FROM "public"."z") AS "z"',
  );
});

Deno.test("withoutHiddenColumns() rewrites every legitimate query of the catalogue", () => {
  const failed = PG_LEGITIMATE.flatMap(({ sql }) => {
    try {
      rewritten(sql);
      return [];
    } catch (error) {
      return [`${sql}: ${(error as Error).message}`];
    }
  });
  assert.deepEqual(failed, []);
});

Deno.test("withoutHiddenColumns() refuses a name it would splice wrong, rather than splice it", () => {
  const sql = "SELECT * FROM z, w";
  const checked = checkPostgresQuery(sql, { defaultSchema: "public" }, parser);
  // The guard's tree says `w` is where `z` is written: the splice would read `w` as `z`.
  const [z, w] = checked.reads;
  const misread: CheckedPostgresQuery = {
    ...checked,
    reads: [{ ...z!, node: { ...z!.node, location: w!.node.location } }, w!],
  };
  const columns = new Map(checked.tables.map((t) => [tableKey(t), ["n"]]));
  assert.throws(
    () => withoutHiddenColumns(sql, misread, columns, parser),
    (error) =>
      error instanceof ApiError && error.status === 400 && /cannot read/.test(error.message),
  );
});

Deno.test("withoutHiddenColumns() refuses a text that would grow past its bound", () => {
  const wide = Array.from({ length: 1_600 }, (_, i) => `column_${i}_${"x".repeat(50)}`);
  const sql = `SELECT 1 FROM ${Array.from({ length: 40 }, (_, i) => `z AS z${i}`).join(", ")}`;
  assert.ok(sql.length < 1_000);
  assert.throws(
    () => rewritten(sql, wide),
    (error) => error instanceof ApiError && error.message.includes(String(MAX_REWRITTEN_LENGTH)),
  );
});
