import assert from "node:assert/strict";
import { type Filter, parseReadQuery } from "../../catalog/filters.ts";
import type { Table } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { afterCondition, sortKeys, surelyConverts } from "../shared/record_filters.ts";
import { Database, type Session } from "./database.ts";
import {
  BoundValues,
  checkFilterValues,
  DUCKDB,
  filterCondition,
  orderBy,
  selectedColumns,
} from "./record_filters.ts";

const COLUMNS: [string, string][] = [
  ["id", "INTEGER"],
  ["name", "VARCHAR"],
  ["Unit Price", "DECIMAL(10,2)"],
  ["ok", "BOOLEAN"],
  ["born", "DATE"],
  ["data", "BLOB"],
];

function table(primaryKey: string[] | null): Table {
  return {
    name: "t",
    schema: "main",
    columns: COLUMNS.map(([name, type], i) => ({
      id: i + 1,
      name,
      type,
      default: null,
      is_nullable: true,
    })),
    constraints: {
      primary_key: primaryKey ? { name: "pk", columns: primaryKey } : null,
      unique: [],
      foreign_keys: [],
    },
  };
}

const ROWS = `INSERT INTO t VALUES
  (1, 'Ada', 9.50, true, '1815-12-10', '\\x01'::BLOB),
  (2, 'Grace', 12.00, false, '1906-12-09', NULL),
  (3, NULL, NULL, NULL, NULL, NULL),
  (4, 'ada*x', 0.99, true, '1912-06-23', '\\x02'::BLOB)`;

/** A session over an in-memory database holding the table `t` of {@link ROWS}. */
async function withRows(work: (session: Session) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const db = await Database.open({ path: ":memory:", spoolDir: dir, tempDir: dir });
  try {
    await db.withSession(async (session) => {
      await session.run(
        `CREATE TABLE t (id INTEGER, name VARCHAR, "Unit Price" DECIMAL(10,2), ok BOOLEAN, born DATE, data BLOB)`,
      );
      await session.run(ROWS);
      await work(session);
    });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The ids of the rows `query` (a query string) filters, in id order. */
async function ids(session: Session, query: string): Promise<number[]> {
  const t = table(null);
  const { filters } = parseReadQuery(new URLSearchParams(query), t.columns);
  await checkFilterValues(session, t, filters);
  const bound = new BoundValues();
  const rows = await session.rows(
    `SELECT id FROM t WHERE ${filterCondition(t, filters, bound)} ORDER BY id`,
    bound.values,
  );
  return rows.map((r) => r.id as number);
}

Deno.test("filterCondition() applies each operator and its negation with SQL's nulls", async () => {
  await withRows(async (s) => {
    const cases: [string, number[]][] = [
      ["id=eq.2", [2]],
      ["id=not.eq.2", [1, 3, 4]],
      ["id=neq.2", [1, 3, 4]],
      ["id=gt.2", [3, 4]],
      ["id=gte.2", [2, 3, 4]],
      ["id=lt.2", [1]],
      ["id=lte.2", [1, 2]],
      ["id=not.lte.2", [3, 4]],
      ["Unit Price=gt.9.5", [2]],
      ["Unit Price=not.gt.9.5", [1, 4]],
      ["born=lt.1900-01-01", [1]],
      ["name=like.A*", [1]],
      ["name=ilike.a*", [1, 4]],
      ["name=not.ilike.a*", [2]],
      ["name=like.*\\*x", []],
      ["id=like.*2*", [2]],
      ["id=in.(1,3)", [1, 3]],
      ["id=not.in.(1,3)", [2, 4]],
      ["id=in.()", []],
      ["id=not.in.()", [1, 2, 3, 4]],
      ['name=in.(Ada,"ada*x")', [1, 4]],
      ["name=is.null", [3]],
      ["name=not.is.null", [1, 2, 4]],
      ["ok=is.true", [1, 4]],
      ["ok=not.is.true", [2, 3]],
      ["ok=is.false", [2]],
      ["ok=eq.t", [1, 4]],
      ["data=eq.AQ==", [1]],
      ["id=gt.1&ok=is.true", [4]],
    ];
    for (const [query, expected] of cases) {
      assert.deepEqual(await ids(s, query), expected, query);
    }
  });
});

Deno.test("filterCondition() binds values, so quotes and SQL in them are only text", async () => {
  await withRows(async (s) => {
    assert.deepEqual(await ids(s, "name=eq.' OR 1=1 --"), []);
    const bound = new BoundValues();
    const sql = filterCondition(table(null), [
      { column: "name", op: "eq", negated: false, value: "x'); DROP TABLE t; --" },
    ], bound);
    assert.equal(sql, '("name" = $1)');
    assert.deepEqual(bound.values, ["x'); DROP TABLE t; --"]);
  });
});

Deno.test("checkFilterValues() refuses a value its column's type cannot take, naming the column", async () => {
  await withRows(async (s) => {
    for (
      const [query, column] of [
        ["id=eq.abc", "id"],
        ["id=in.(1,x)", "id"],
        ["id=eq.2147483648", "id"],
        ["id=in.(1,-2147483649)", "id"],
        ["Unit Price=gt.cheap", "Unit Price"],
        ["born=eq.1815-13-45", "born"],
        ["ok=eq.maybe", "ok"],
        ["data=eq.!!", "data"],
      ]
    ) {
      await assert.rejects(
        () => ids(s, query!),
        (e) => e instanceof ApiError && e.status === 400 && e.message.includes(`"${column}"`),
        query,
      );
    }
    // Text needs no check and runs no statement.
    await checkFilterValues(s, table(null), [
      { column: "name", op: "eq", negated: false, value: "anything" },
    ]);
  });
});

Deno.test("surelyConverts() passes only texts DuckDB converts, at every integer type's bounds", async () => {
  const types = [
    ["TINYINT", 7n, true],
    ["SMALLINT", 15n, true],
    ["INTEGER", 31n, true],
    ["BIGINT", 63n, true],
    ["HUGEINT", 127n, true],
    ["UTINYINT", 8n, false],
    ["USMALLINT", 16n, false],
    ["UINTEGER", 32n, false],
    ["UBIGINT", 64n, false],
    ["UHUGEINT", 128n, false],
  ] as const;
  await withRows(async (s) => {
    let passed = 0;
    for (const [type, bits, signed] of types) {
      const top = 2n ** bits - 1n;
      const bottom = signed ? -(2n ** bits) : 0n;
      const texts = [
        `${top}`,
        `${top + 1n}`,
        `${bottom}`,
        `${bottom - 1n}`,
        "0",
        "-0",
        "007",
        "+5",
        " 5",
        "1e2",
        "1_0",
        "",
        "-",
        "٣",
      ];
      for (const text of texts) {
        const sure = surelyConverts(DUCKDB, { type, text, what: "x" });
        const [row] = await s.rows(`SELECT TRY_CAST($1::VARCHAR AS ${type}) IS NOT NULL AS ok`, [
          text,
        ]);
        if (sure) {
          assert.equal(row?.ok, true, `${type} ${JSON.stringify(text)}`);
          passed++;
        }
      }
      assert.equal(surelyConverts(DUCKDB, { type, text: `${top + 1n}`, what: "x" }), false, type);
      assert.equal(
        surelyConverts(DUCKDB, { type, text: `${bottom - 1n}`, what: "x" }),
        false,
        type,
      );
    }
    assert.equal(surelyConverts(DUCKDB, { type: "DATE", text: "1", what: "x" }), false);
    assert.ok(passed >= 50, `only ${passed} texts were sure`);
  });
});

Deno.test("filterCondition() refuses is.true on a column that is not BOOLEAN", () => {
  const filter: Filter = { column: "id", op: "is", negated: false, value: true };
  assert.throws(
    () => filterCondition(table(null), [filter], new BoundValues()),
    (e) => e instanceof ApiError && e.status === 400 && e.message.includes('"id"'),
  );
});

Deno.test("selectedColumns() keeps the asked order, else all columns", () => {
  assert.deepEqual(selectedColumns(table(null), ["Unit Price", "id"]).map((c) => c.name), [
    "Unit Price",
    "id",
  ]);
  assert.equal(selectedColumns(table(null)).length, COLUMNS.length);
});

Deno.test("sortKeys() ends in the primary key's remaining columns, else the insertion position", () => {
  assert.equal(orderBy(sortKeys(DUCKDB, table(null), [])), "rowid ASC NULLS LAST");
  assert.equal(orderBy(sortKeys(DUCKDB, table(["id"]), [])), '"id" ASC NULLS LAST');
  assert.equal(
    orderBy(
      sortKeys(DUCKDB, table(["name", "id"]), [{ column: "id", direction: "desc", nulls: "last" }]),
    ),
    '"id" DESC NULLS LAST, "name" ASC NULLS LAST',
  );
  assert.equal(
    orderBy(
      sortKeys(DUCKDB, table(null), [{ column: "Unit Price", direction: "asc", nulls: "first" }]),
    ),
    '"Unit Price" ASC NULLS FIRST, rowid ASC NULLS LAST',
  );
  assert.equal(
    orderBy(sortKeys(DUCKDB, table(["id"]), []), (_key, i) => `k${i}`),
    "k0 ASC NULLS LAST",
  );
});

Deno.test("filterCondition() matches like and ilike in time linear in the text", () => {
  // DuckDB's LIKE with a bound pattern backtracks: ilike.*a*a*a*b over one value of 400
  // characters took 10 s. A pattern of one piece is a prefix, suffix or contains test,
  // anything else an RE2 expression.
  const match = (op: "like" | "ilike", value: string) => {
    const bound = new BoundValues();
    const sql = filterCondition(
      table(null),
      [{ column: "name", op, negated: false, value }],
      bound,
    );
    return { sql, values: bound.values };
  };
  assert.deepEqual(match("like", "row12*"), {
    sql: '(starts_with("name", $1))',
    values: ["row12"],
  });
  assert.deepEqual(match("like", "*12"), { sql: '(ends_with("name", $1))', values: ["12"] });
  assert.deepEqual(match("like", "*w1*"), { sql: '(contains("name", $1))', values: ["w1"] });
  assert.deepEqual(match("like", "a\\b"), { sql: '("name" = $1)', values: ["a\\b"] });
  assert.deepEqual(match("like", "*a*b"), {
    sql: `(regexp_full_match("name", $1, 's'))`,
    values: [".*a.*b"],
  });
  assert.deepEqual(match("ilike", "*W1*"), {
    sql: '(contains(lower("name"), lower($1)))',
    values: ["W1"],
  });
  assert.deepEqual(match("ilike", "a\u0000_"), {
    sql: `(regexp_full_match(lower("name"), lower($1), 's'))`,
    values: ["a\\x00."],
  });
});

Deno.test("afterCondition() writes an integer key's text as a literal and binds others", () => {
  const bound = new BoundValues();
  const key = (sql: string, type: string) => ({
    sql,
    type,
    direction: "asc" as const,
    nulls: "last" as const,
  });
  // A literal lets DuckDB skip the row groups before it; a bound value does not.
  assert.equal(
    afterCondition(DUCKDB, [key("rowid", "BIGINT")], ["41"], bound),
    "rowid > CAST(41 AS BIGINT)",
  );
  assert.deepEqual(bound.values, []);
  assert.equal(
    afterCondition(DUCKDB, [key('"name"', "VARCHAR"), key("rowid", "BIGINT")], ["x", "7"], bound),
    '"name" >= $1 AND ("name" > $1 OR ("name" = $1 AND (rowid > CAST(7 AS BIGINT))))',
  );
  assert.deepEqual(bound.values, ["x"]);
});
