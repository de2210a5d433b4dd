import assert from "node:assert/strict";
import { Database } from "../src/store/postgres/database.ts";
import { PG_HOSTILE } from "./fixtures/postgres_query_catalogue.ts";
import { PG_LEGITIMATE } from "./fixtures/postgres_query_legitimate.ts";
import { postgresEnv, postgresTest } from "./helpers/postgres.ts";
import { errorOf, mint, ok, TestServer } from "./helpers/server.ts";
import { MAX_JSON_VALUE_CHARS } from "../src/store/postgres/result_formats.ts";
import { query } from "./helpers/query.ts";

/** The catalogue's schemas and tables (see query_catalogue.ts), made directly in PostgreSQL. */
const FIXTURE = `
  CREATE SCHEMA IF NOT EXISTS sales; CREATE SCHEMA IF NOT EXISTS secret;
  CREATE TABLE public.customers (id integer PRIMARY KEY, name text, country text);
  CREATE TABLE public.orders (id integer, customer_id integer, amount double precision,
    created_at timestamp, status text, tags text[], meta jsonb);
  CREATE TABLE public.events (at timestamp, kind text);
  CREATE VIEW public.big_orders AS SELECT * FROM public.orders WHERE amount > 100;
  CREATE TABLE sales.targets (region text, target double precision);
  CREATE TABLE secret.salaries (name text, salary integer);
  INSERT INTO public.customers VALUES (1, 'Ann', 'NO'), (2, 'Bo', 'SE');
  INSERT INTO public.orders VALUES (1, 1, 10, '2026-01-01 10:00', 'paid', '{a,b}', '{"k": 1}'),
    (2, 1, 250, '2026-02-01 11:00', 'paid', '{}', NULL), (3, 2, 5, NULL, 'open', NULL, NULL);
  INSERT INTO sales.targets VALUES ('north', 1000);
  INSERT INTO secret.salaries VALUES ('Eve', 1);
`;

await postgresTest(`POST /query on PostgreSQL`, async (t, database) => {
  const env = await postgresEnv(database);
  const server = await TestServer.start({ ...env, QUERY_TIMEOUT_SECONDS: "1" });
  const direct = await Database.open({ url: env.DATABASE_URL, maxConnections: 1 });
  const count = async () =>
    (await direct.withSession((s) =>
      s.rows(
        "SELECT (SELECT count(*) FROM public.orders)::int AS o, " +
          "(SELECT count(*) FROM pg_catalog.pg_class)::int AS c",
      )
    ))[0];
  try {
    for (const statement of FIXTURE.split(";").map((s) => s.trim()).filter(Boolean)) {
      await direct.withSession((s) => s.run(statement));
    }
    const before = await count();

    await t.step(
      "every query of the hostile catalogue is refused, and nothing changes",
      async () => {
        for (const hostile of PG_HOSTILE) {
          const token = hostile.schemas
            ? await mint({ scope: "tables:read", schemas: [...hostile.schemas] })
            : undefined;
          const answer = await query(server, hostile.sql, { token });
          assert.equal(answer.status, hostile.status ?? 400, `${hostile.sql}: ${answer.text}`);
        }
        assert.equal((await server.request("GET", "/readyz", { token: null })).status, 200);
        assert.deepEqual(await count(), before);
      },
    );

    await t.step(
      "the legitimate queries pass the guard, and those valid here answer",
      async () => {
        let answered = 0;
        for (const legitimate of PG_LEGITIMATE) {
          const answer = await query(server, legitimate.sql, { params: legitimate.params });
          if (answer.status === 200) answered++;
          // Some are written for the guard alone (a column without its table): PostgreSQL
          // itself refuses those, never the guard.
          else {assert.match(
              answer.text,
              /The query failed: |which is not a table/,
              `${legitimate.sql}: ${answer.text}`,
            );}
        }
        assert.ok(answered > PG_LEGITIMATE.length / 2, `${answered} of ${PG_LEGITIMATE.length}`);
      },
    );

    await t.step("a table's hidden column of insertion order never shows", async () => {
      ok(
        await server.request("POST", "table/notes", {
          body: { table: { columns: [{ name: "n", type: "integer" }] } },
        }),
      );
      ok(await server.request("POST", "table/notes/records", { body: [{ n: 1 }, { n: 2 }] }));
      const answer = ok(await query(server, "SELECT * FROM notes ORDER BY n"));
      assert.deepEqual(answer.columns, [{ name: "n", type: "integer" }]);
      assert.deepEqual(answer.records, [{ n: 1 }, { n: 2 }]);
      const csv = await query(server, "SELECT *, n AS m FROM notes ORDER BY n", {
        search: "?format=csv",
      });
      assert.equal(csv.text, "n,m\n1,1\n2,2\n");
    });

    await t.step("an answer has PostgreSQL's types, bound parameters and a limit", async () => {
      const answer = ok(
        await query(server, "SELECT id, amount, id FROM orders WHERE status = $1 ORDER BY id", {
          params: ["paid"],
          search: "?limit=1",
        }),
      );
      assert.deepEqual(answer.columns, [
        { name: "id", type: "integer" },
        { name: "amount", type: "double precision" },
        { name: "id_1", type: "integer" },
      ]);
      assert.deepEqual(answer.records, [{ id: 1, amount: 10, id_1: 1 }]);
      assert.equal(answer.truncated, true);
      assert.equal((await query(server, "SELECT * FROM nope")).status, 400);
      assert.equal((await query(server, "SELECT $1::int AS a")).status, 400);
    });

    await t.step("a slow query is interrupted with 408", async () => {
      const answer = await query(
        server,
        "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
      );
      assert.equal(answer.status, 408, answer.text);
      assert.equal(answer.body.error.type, "request_timeout");
    });

    await t.step("every format streams", async () => {
      const sql = "SELECT id, status FROM orders ORDER BY id";
      const csv = await query(server, sql, { search: "?format=csv" });
      assert.equal(csv.status, 200, csv.text);
      assert.equal(csv.text, "id,status\n1,paid\n2,paid\n3,open\n");
      const ndjson = await query(server, sql, { search: "?format=ndjson" });
      assert.equal(ndjson.text.trim().split("\n").length, 3);
      assert.deepEqual(JSON.parse(ndjson.text.split("\n")[0]!), { id: 1, status: "paid" });
      const json = await query(server, sql, { search: "?format=json" });
      assert.equal(json.body.records.length, 3, json.text);
      const response = await fetch(`${server.base}/api/v1/query?format=parquet`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${server.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ sql }),
      });
      assert.equal(response.status, 200);
      const bytes = new Uint8Array(await response.arrayBuffer());
      assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "PAR1");
    });

    await t.step(
      "a value too long to render as JSON is 503, and the service stays up",
      async () => {
        // One character more than MAX_JSON_VALUE_CHARS; near 300 million V8 aborts the process.
        const sql = `SELECT repeat('x', ${MAX_JSON_VALUE_CHARS + 1}) AS x`;
        // Making 134 MB can take PostgreSQL longer than this file's 1 s on a busy machine.
        const patient = await TestServer.start(env);
        try {
          const answer = await query(patient, sql, { search: "?format=json" });
          const error = errorOf(answer, 503);
          assert.match(error.message, /column "x" holds a value of 134217729 characters/);
          assert.equal(answer.headers.get("retry-after"), null);
          // A stream that has begun is cut short instead.
          const cut = await query(patient, sql, { search: "?format=ndjson" }).then(
            (a) => a.status,
            (e: Error) => e.message,
          );
          assert.equal(cut, "error reading a body from connection");
          ok(await patient.request("GET", "/healthz"));
        } finally {
          await patient.dispose();
        }
      },
    );
  } finally {
    await direct.close();
    await server.dispose();
  }
});
