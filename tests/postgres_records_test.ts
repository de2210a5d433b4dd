import assert from "node:assert/strict";
import { Database } from "../src/store/postgres/database.ts";
import { postgresEnv, postgresTest } from "./helpers/postgres.ts";
import { errorOf, ok, TestServer } from "./helpers/server.ts";
import { CUSTOMERS_TABLE, ORDERS_TABLE, PEOPLE_TABLE } from "./fixtures/tables.ts";

const people = PEOPLE_TABLE;

/**
 * The rows of tests/reads_test.ts, inserted with plain SQL, so that a read test does not
 * depend on the loads it does not test.
 */
const PEOPLE = `INSERT INTO people (id, name, age, "Unit Price", active, born) VALUES
  (1, 'Ada', 36, 9.5, true, '1815-12-10'), (2, 'Grace', 85, 12, false, '1906-12-09'),
  (3, NULL, NULL, NULL, NULL, NULL), (4, 'alan', 41, 0.99, true, '1912-06-23'),
  (5, 'Edsger', 72, 12, false, '1930-05-11'), (6, 'it''s, "odd"', 36, 3.25, true, NULL)`;

const customers = CUSTOMERS_TABLE;

const orders = ORDERS_TABLE;

await postgresTest(
  `Records are read, summarised, changed and deleted over HTTP on PostgreSQL`,
  async (t, database) => {
    const env = await postgresEnv(database);
    const server = await TestServer.start(env);
    const sql = await Database.open({ url: env.DATABASE_URL });
    const insert = (text: string) => sql.withSession((s) => s.run(text));
    const read = async (table: string, query: string) =>
      ok(await server.request("GET", `table/${table}/records?${query}`));
    try {
      ok(await server.request("POST", "table/people", { body: { table: people } }));
      await insert(PEOPLE);

      await t.step("a cursor walk of a table without a key, in insertion order", async () => {
        ok(
          await server.request("POST", "table/unkeyed", {
            body: {
              table: {
                columns: [{ name: "grp", type: "integer" }, { name: "label", type: "varchar" }],
              },
            },
          }),
        );
        await insert(
          `INSERT INTO unkeyed (grp, label)
           SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE i % 5 END, 'row ' || i
           FROM generate_series(0, 202) AS i`,
        );
        for (const query of ["", "order=grp", "order=grp.desc.nullslast,label", "grp=gte.2"]) {
          const whole = (await read("unkeyed", `${query}&limit=10000`)).records;
          const walked: unknown[] = [];
          let after: string | null = "";
          let pages = 0;
          while (after !== null) {
            const page = await read(
              "unkeyed",
              `${query}&limit=37&after=${encodeURIComponent(after)}`,
            );
            walked.push(...page.records);
            after = page.next;
            pages++;
          }
          assert.deepEqual(walked, whole, query);
          assert.equal(pages, Math.max(1, Math.ceil(whole.length / 37)), query);
        }
        const first = (await read("unkeyed", "limit=3")).records;
        assert.deepEqual(first.map((r: { label: string }) => r.label), ["row 0", "row 1", "row 2"]);
        const { next } = await read("unkeyed", "order=grp&after=&limit=5");
        const error = errorOf(
          await server.request("GET", `table/unkeyed/records?order=grp.desc&after=${next}`),
          400,
        );
        assert.match(error.message, /after/);
      });

      await t.step("the summary gives per-column figures of the filtered rows", async () => {
        const summary = ok(
          await server.request("GET", "table/people/summary?select=age,name&active=is.true"),
        );
        assert.equal(summary.rows, 3);
        assert.deepEqual(summary.columns[0], {
          name: "age",
          type: "smallint",
          count: 3,
          nulls: 0,
          approx_distinct: 2,
          min: 36,
          max: 41,
          avg: 113 / 3,
          std: summary.columns[0].std,
          q25: 36,
          q50: 36,
          q75: 38.5,
        });
        assert.deepEqual(
          [summary.columns[1].min, summary.columns[1].max],
          ["Ada", 'it\'s, "odd"'],
        );
        errorOf(await server.request("GET", "table/people/summary?age=gt.old"), 400);
      });

      ok(await server.request("POST", "table/customers", { body: { table: customers } }));
      ok(await server.request("POST", "table/orders", { body: { table: orders } }));
      await insert("INSERT INTO customers (id, name) VALUES (1, 'Ada'), (2, 'Grace'), (3, 'L')");
      await insert(
        `INSERT INTO orders (id, customer_id, status, qty, price, code, paid) VALUES
         (1, 1, 'new', 1, 9.5, 'A-1', true), (2, 1, 'new', 5, 20, 'A-2', false),
         (3, 2, 'shipped', 10, 1.25, 'B-1', NULL), (4, NULL, 'Cancelled', NULL, NULL, NULL, NULL)`,
      );
      const everything = async () =>
        JSON.stringify([
          (await read("orders", "limit=100")).records,
          (await read("customers", "limit=100")).records,
        ]);

      await t.step("PATCH and DELETE by filter", async () => {
        assert.deepEqual(
          ok(
            await server.request("PATCH", "table/orders/records?status=eq.new&qty=gt.1", {
              body: { note: "big" },
            }),
          ),
          { updated: 1 },
        );
        ok(
          await server.request("PATCH", "table/orders/records?id=eq.1", {
            body: '{"ID": 9007199254740993, "Price": 12345678.99, "paid": "f", "qty": "7"}',
            headers: { "content-type": "application/json" },
          }),
        );
        const row = (await read("orders", "code=eq.A-1")).records[0];
        assert.deepEqual(
          [row.id, row.price, row.paid, row.qty],
          ["9007199254740993", 12345678.99, false, 7],
        );
        assert.deepEqual(ok(await server.request("DELETE", "table/orders/records?id=eq.4")), {
          deleted: 1,
        });
      });

      await t.step("what is refused is answered as on DuckDB and changes nothing", async () => {
        const before = await everything();
        const refused = async (
          method: string,
          path: string,
          body: unknown,
          status: number,
          message: RegExp,
        ) => {
          const error = errorOf(await server.request(method, path, { body }), status);
          assert.match(error.message, message, `${method} ${path}`);
          return error;
        };
        await refused("PATCH", "table/orders/records?qty=eq.many", { qty: 1 }, 400, /"qty"/);
        await refused("DELETE", "table/orders/records?qty=eq.many", undefined, 400, /"qty"/);
        await refused("PATCH", "table/orders/records?id=eq.2", { colour: "x" }, 422, /colour/);
        const bad = await refused(
          "PATCH",
          "table/orders/records?id=eq.2",
          { qty: "many", paid: 2, note: "fine" },
          422,
          /"orders".*Value "many" is not a valid integer/,
        );
        assert.deepEqual(bad.details?.map((d) => (d as { column: string }).column), [
          "qty",
          "paid",
        ]);
        await refused(
          "PATCH",
          "table/orders/records?id=eq.2",
          { status: null },
          422,
          /"status" is NOT NULL/,
        );
        await refused(
          "PATCH",
          "table/orders/records?id=eq.2",
          { code: "B-1" },
          409,
          /primary or unique key another row has/,
        );
        await refused(
          "PATCH",
          "table/orders/records?id=eq.2",
          { customer_id: 99 },
          422,
          /reference a row that does not exist/,
        );
        await refused(
          "DELETE",
          "table/customers/records?id=in.(2,1,3)",
          undefined,
          409,
          /referenced by another table's foreign key/,
        );
        await refused(
          "PATCH",
          "table/customers/records?id=eq.2",
          { id: 20 },
          409,
          /foreign key references/,
        );
        await refused("PATCH", "table/nothing/records?id=eq.1", { a: 1 }, 404, /nothing/);
        assert.equal(await everything(), before);
      });
    } finally {
      await sql.close();
      await server.dispose();
    }
  },
);

await postgresTest(
  "a key too long for PostgreSQL's B-tree index is 422 saying so on every route, and changes nothing",
  async (_t, database) => {
    const env = await postgresEnv(database);
    const server = await TestServer.start(env);
    try {
      const table = {
        columns: [{ name: "k", type: "varchar" }, { name: "v", type: "varchar" }],
        constraints: { unique: [{ columns: ["k"] }] },
      };
      ok(await server.request("POST", "table/u", { body: { table } }));
      // Letters from a pseudo-random sequence: PostgreSQL compresses an index entry before it
      // measures it, and a repeating pattern would fit.
      let seed = 42;
      const long = Array.from({ length: 6_000 }, () => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        return "abcdefghijklmnopqrstuvwxyz0123456789"[seed % 36];
      }).join("");
      ok(await server.request("POST", "table/u/records", { body: [{ k: "x", v: long }] }));
      const state = async () =>
        JSON.stringify([
          ok(await server.request("GET", "table/u")),
          ok(await server.request("GET", "table/u/records")),
        ]);
      const before = await state();
      const { columns } = ok(await server.request("GET", "table/u")).table;
      const attempts: [string, string, unknown][] = [
        ["POST", "table/u/records", [{ k: long, v: "y" }]],
        ["PATCH", "table/u/records?k=eq.x", { k: long }],
        ["PUT", "table/u", {
          table: { columns, constraints: { primary_key: { columns: ["v"] } } },
        }],
        ["PUT", "table/u", {
          table: { columns, constraints: { unique: [{ columns: ["k"] }, { columns: ["v"] }] } },
        }],
      ];
      for (const [method, path, body] of attempts) {
        const error = errorOf(await server.request(method, path, { body }), 422);
        assert.match(error.message, /index row size \d+ exceeds btree/, `${method} ${path}`);
        assert.match(error.message, /must fit in one entry of PostgreSQL's B-tree index/);
        assert.equal(await state(), before, `${method} ${path}`);
      }
    } finally {
      await server.dispose();
    }
  },
);

await postgresTest(
  "values PostgreSQL cannot hold or compare are 4xx saying why, and filters match as on DuckDB",
  async (t, database) => {
    const env = await postgresEnv(database);
    const server = await TestServer.start(env);
    const request = (method: string, path: string, body?: unknown) =>
      server.request(method, path, { body });
    try {
      ok(
        await request("POST", "table/odd", {
          table: {
            columns: [
              { name: "id", type: "integer" },
              { name: "tx", type: "varchar" },
              { name: "bt", type: "bit(3)" },
              { name: "ia", type: "integer[]" },
              { name: "ja", type: "json[]" },
              { name: "j", type: "json" },
            ],
            constraints: { primary_key: { columns: ["id"] } },
          },
        }),
      );
      ok(
        await request("POST", "table/odd/records", [
          { id: 1, tx: "a\\b", bt: "101", ia: [1, 2], ja: [{ k: 2 }], j: { k: 1 } },
          { id: 2, tx: "a%b", bt: "011", ia: [3], ja: [{ k: 1 }], j: [1] },
        ]),
      );
      const before = JSON.stringify(ok(await request("GET", "table/odd/records")));

      await t.step("a NUL character is 422 in a load, 400 in a filter", async () => {
        for (
          const path of ["table/odd/records", "table/odd/records?on_conflict=update"]
        ) {
          const error = errorOf(await request("POST", path, [{ id: 3, tx: "a\u0000" }]), 422);
          assert.match(error.message, /PostgreSQL text cannot hold the NUL character/);
        }
        const error = errorOf(await request("GET", "table/odd/records?tx=eq.%00"), 400);
        assert.match(error.message, /Filter on column "tx" has a NUL character/);
        errorOf(await request("GET", "table/odd/records?tx=like.a%00"), 400);
      });

      await t.step("a bit string of another length than bit(n) is 422", async () => {
        const error = errorOf(
          await request("POST", "table/odd/records", [{ id: 3, bt: "1111" }]),
          422,
        );
        assert.match(error.message, /bit string length 4 does not match type bit\(3\)/);
        // PATCH too: an explicit cast would have padded "1" to "100".
        const patched = errorOf(
          await request("PATCH", "table/odd/records?id=eq.1", { bt: "1" }),
          422,
        );
        assert.match(patched.message, /bit string length 1 does not match type bit\(3\)/);
      });

      await t.step("like has no escape character: a backslash is itself", async () => {
        const ids = async (query: string) =>
          ok(await request("GET", `table/odd/records?select=id&${query}`)).records.map(
            (r: { id: number }) => r.id,
          );
        assert.deepEqual(await ids("tx=like.a%5Cb"), [1]);
        assert.deepEqual(await ids("tx=ilike.*%5C"), []);
        assert.deepEqual(await ids("tx=like.*%5C*"), [1]);
        // "a\%b": the % after the backslash is still any text.
        assert.deepEqual(await ids("tx=like.a%5C%25b"), [1]);
      });

      await t.step(
        "an interval reads in DuckDB's text whatever IntervalStyle the database has",
        async () => {
          const direct = await Database.open({ url: env.DATABASE_URL });
          try {
            await direct.withSession(async (s) => {
              const [{ name }] = await s.rows("SELECT current_database() AS name") as [
                { name: string },
              ];
              await s.run(`ALTER DATABASE "${name}" SET IntervalStyle = 'iso_8601'`);
            });
          } finally {
            await direct.close();
          }
          // A new instance: its connections start with the database's setting.
          const iso = await TestServer.start(env);
          try {
            ok(
              await iso.request("POST", "table/spans", {
                body: { table: { columns: [{ name: "v", type: "interval" }] } },
              }),
            );
            ok(
              await iso.request("POST", "table/spans/records", {
                body: [{ v: "1 day -04:00:00" }],
              }),
            );
            const { records } = ok(await iso.request("GET", "table/spans/records"));
            assert.deepEqual(records, [{ v: "1 day -04:00:00" }]);
            const query = ok(
              await iso.request("POST", "query", { body: { sql: "SELECT v FROM spans" } }),
            );
            assert.deepEqual(query.records, [{ v: "1 day -04:00:00" }]);
          } finally {
            await iso.dispose();
          }
        },
      );

      await t.step("in on an array column compares whole arrays", async () => {
        const ids = async (query: string) =>
          ok(await request("GET", `table/odd/records?select=id&${query}`)).records.map(
            (r: { id: number }) => r.id,
          );
        assert.deepEqual(await ids(`ia=in.(${encodeURIComponent('"{1,2}","{9}"')})`), [1]);
        assert.deepEqual(await ids(`ia=not.in.(${encodeURIComponent('"{3}"')})`), [1]);
        // An item longer than a varchar(n)[]'s length is not cut to match.
        ok(
          await request("POST", "table/short", {
            table: { columns: [{ name: "a", type: "varchar(3)[]" }] },
          }),
        );
        ok(await request("POST", "table/short/records", [{ a: ["abc"] }]));
        const short = (items: string) =>
          request("GET", `table/short/records?a=in.(${encodeURIComponent(items)})`);
        assert.equal(ok(await short('"{abcd}"')).records.length, 0);
        assert.equal(ok(await short('"{abc}"')).records.length, 1);
      });

      await t.step("json[] sorts and summarises by its text", async () => {
        const page = ok(await request("GET", "table/odd/records?select=id&order=ja"));
        assert.deepEqual(page.records, [{ id: 2 }, { id: 1 }]);
        const next = ok(
          await request("GET", "table/odd/records?select=id&order=ja&after=&limit=1"),
        );
        const rest = ok(
          await request(
            "GET",
            `table/odd/records?select=id&order=ja&after=${encodeURIComponent(next.next)}`,
          ),
        );
        assert.deepEqual(rest.records, [{ id: 1 }]);
        const summary = ok(await request("GET", "table/odd/summary?select=ja,j"));
        assert.deepEqual(
          summary.columns.map((c: { approx_distinct: number }) => c.approx_distinct),
          [2, 2],
        );
      });

      await t.step("a PUT adding a key over json is 422, as POST /table", async () => {
        const { table } = ok(await request("GET", "table/odd"));
        const error = errorOf(
          await request("PUT", "table/odd", {
            table: {
              ...table,
              constraints: { ...table.constraints, unique: [{ columns: ["j"] }] },
            },
          }),
          422,
        );
        assert.match(error.message, /^Cannot update table "odd": could not identify/);
      });

      assert.equal(JSON.stringify(ok(await request("GET", "table/odd/records"))), before);
    } finally {
      await server.dispose();
    }
  },
);
