import assert from "node:assert/strict";
import { errorOf, ok, TestServer } from "./helpers/server.ts";
import { query } from "./helpers/query.ts";
import { onDuckDB } from "./helpers/engine.ts";

Deno.test("query: more params than the query takes is 400 saying how many of each", async () => {
  const server = await TestServer.start();
  try {
    for (
      const [sql, params, message] of [
        ["SELECT $1 AS x", [1, 2], "The query takes 1 parameter, but 2 were given"],
        ["SELECT 1 AS x", [1], "The query takes 0 parameters, but 1 was given"],
        [
          "SELECT $1::int + $2::int AS x",
          [1, 2, 3],
          "The query takes 2 parameters, but 3 were given",
        ],
      ] as const
    ) {
      for (const search of ["", "?format=csv"]) {
        const error = errorOf(await query(server, sql, { params, search }), 400);
        assert.equal(error.message, message, `${sql}${search}`);
      }
    }
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("query: a number binds as a type that holds it, however large", async () => {
  const server = await TestServer.start();
  try {
    const bound = async (param: number) => {
      const answer = ok(await query(server, "SELECT $1 AS x", { params: [param] }));
      return [answer.columns[0].type, answer.records[0].x];
    };
    assert.deepEqual(await bound(7), ["HUGEINT", 7]);
    assert.deepEqual(await bound(1.5), ["DOUBLE", 1.5]);
    // Beyond BIGINT: HUGEINT, exact (shown as text beyond 2^53, as records show such values).
    assert.deepEqual(await bound(1e20), ["HUGEINT", "100000000000000000000"]);
    assert.deepEqual(await bound(-(2 ** 100)), ["HUGEINT", String(-(2n ** 100n))]);
    // Beyond HUGEINT: DOUBLE.
    assert.deepEqual(await bound(2 ** 127), ["DOUBLE", 2 ** 127]);
    assert.deepEqual(await bound(1e308), ["DOUBLE", 1e308]);
    assert.deepEqual(await bound(-1e308), ["DOUBLE", -1e308]);
    // Streamed formats bind the same way.
    const csv = await query(server, "SELECT $1 AS x, $2 AS y", {
      params: [1e20, 1e308],
      search: "?format=csv",
    });
    assert.equal(csv.status, 200, csv.text);
    assert.equal(csv.text, "x,y\n100000000000000000000,1e+308\n");
    const parquet = await query(server, "SELECT $1 AS x", {
      params: [1e308],
      search: "?format=parquet",
    });
    assert.equal(parquet.status, 200, parquet.text);
    // A value the asked type cannot hold is an error of the query: 400 quoting DuckDB.
    const error = errorOf(
      await query(server, "SELECT $1::int AS x", { params: [100000000000000000000] }),
      400,
    );
    assert.match(error.message, /^The query failed: .*INT/);
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("query: a parameter where DuckDB takes none (ORDER BY $1) is 400, not 500", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/t", {
        body: { table: { columns: [{ name: "id", type: "integer" }] } },
      }),
    );
    for (
      const [sql, clause] of [
        ["SELECT id FROM t ORDER BY $1", "ORDER BY"],
        ["SELECT count(*) AS c FROM t GROUP BY $1", "GROUP BY"],
        ["SELECT DISTINCT ON ($1) id FROM t", "DISTINCT ON"],
      ] as const
    ) {
      for (const search of ["", "?format=ndjson"]) {
        const error = errorOf(await query(server, sql, { params: [1], search }), 400);
        assert.match(error.message, new RegExp(`Parameter not supported in ${clause} clause`));
      }
    }
  } finally {
    await server.dispose();
  }
});

Deno.test("query: an integer param beyond 2^53 binds with every digit it was sent with", async () => {
  const server = await TestServer.start();
  try {
    // JSON.parse alone makes 9007199254740993 the double 9007199254740992.
    for (const sent of ["9007199254740993", "-123456789012345678901", "18446744073709551617"]) {
      for (const search of ["", "?format=csv"]) {
        const answer = await server.request("POST", `query${search}`, {
          body: `{"sql": "SELECT CAST($1 AS VARCHAR) AS x", "params": [${sent}]}`,
          headers: { "content-type": "application/json" },
        });
        assert.equal(answer.status, 200, answer.text);
        const got = search === "" ? answer.body.records[0].x : answer.text.split("\n")[1];
        assert.equal(got, sent, `${sent}${search}`);
      }
    }
    // A number written with a fraction or an exponent stays a double.
    const answer = ok(
      await server.request("POST", "query", {
        body:
          `{"sql": "SELECT CAST($1 AS FLOAT8) = 9007199254740992 AS same", "params": [9007199254740993.0]}`,
        headers: { "content-type": "application/json" },
      }),
    );
    assert.equal(answer.records[0].same, true);
  } finally {
    await server.dispose();
  }
});
