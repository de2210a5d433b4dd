/**
 * The record and upload routes on PostgreSQL, in process: what tests/rows_test.ts asks of
 * them on DuckDB, each load read back from the database itself, not through the service
 * that made it.
 */
import assert from "node:assert/strict";
import { Database } from "../src/store/postgres/database.ts";
import { postgresEnv, postgresTest } from "./helpers/postgres.ts";
import { errorOf, ok, TestServer, uploadForm } from "./helpers/server.ts";
import { LOADED_PEOPLE_TABLE } from "./fixtures/tables.ts";

const people = LOADED_PEOPLE_TABLE;

await postgresTest(`records and uploads on PostgreSQL`, async (t, pg) => {
  const env = await postgresEnv(pg);
  const server = await TestServer.start(env);
  const db = await Database.open({ url: env.DATABASE_URL, maxConnections: 1 });
  const rows = (sql: string) => db.withSession((s) => s.rows(sql));
  const count = async (table: string) =>
    Number((await rows(`SELECT count(*) AS n FROM public."${table}"`))[0]!.n);
  try {
    ok(await server.request("POST", "table/people", { body: { table: people } }));

    await t.step("POST records inserts a batch; absent columns take their defaults", async () => {
      const answer = ok(
        await server.request("POST", "table/people/records", {
          body: [
            { id: 2, name: "Grace", age: 85 },
            { id: 1, name: "Ada", age: 36, city: "London" },
            { id: 3, name: "Linus" },
          ],
        }),
      );
      assert.equal(answer.inserted, 3);
      assert.equal(answer.table.name, "people");
      assert.equal(answer.skipped, undefined);
      ok(
        await server.request("POST", "table/people/records", {
          body: [{ id: 7, name: "Edsger" }],
        }),
      );
      assert.deepEqual(await rows(`SELECT id, name, age, city FROM people ORDER BY id`), [
        { id: 1, name: "Ada", age: 36, city: "London" },
        { id: 2, name: "Grace", age: 85, city: null },
        { id: 3, name: "Linus", age: null, city: null },
        { id: 7, name: "Edsger", age: null, city: "Lima" },
      ]);
      await rows(`DELETE FROM people WHERE id = 7`);
    });

    await t.step(
      "on_conflict=fail rejects the whole batch with 409 naming the rows",
      async () => {
        const answer = await server.request("POST", "table/people/records", {
          body: [{ id: 4, name: "New" }, { id: 1, name: "Again" }, { id: 5, name: "Twice" }, {
            id: 5,
            name: "Twice",
          }],
        });
        const error = errorOf(answer, 409);
        assert.deepEqual(error.details?.map((d) => (d as { row: number }).row), [1, 3]);
        assert.equal(await count("people"), 3);
      },
    );

    await t.step("on_conflict=skip skips key conflicts, also within the batch", async () => {
      const answer = ok(
        await server.request("POST", "table/people/records?on_conflict=skip", {
          body: [{ id: 1, name: "Skipped" }, { id: 4, name: "Dennis" }, { id: 4, name: "Dup" }],
        }),
      );
      assert.equal(answer.inserted, 1);
      assert.equal(answer.skipped, 2);
      assert.deepEqual(await rows(`SELECT name FROM people WHERE id IN (1, 4) ORDER BY id`), [
        { name: "Ada" },
        { name: "Dennis" },
      ]);
    });

    await t.step("on_conflict=skip still rejects a NOT NULL or cast error", async () => {
      for (const body of [[{ id: 9, name: null }], [{ id: "x", name: "y" }]]) {
        errorOf(
          await server.request("POST", "table/people/records?on_conflict=skip", { body }),
          422,
        );
      }
      assert.equal(await count("people"), 4);
    });

    await t.step(
      "on_conflict=update updates existing keys, the last row of a key wins",
      async () => {
        const answer = ok(
          await server.request("POST", "table/people/records?on_conflict=update", {
            body: [{ id: 1, name: "Ada L." }, { id: 8, name: "Barbara" }, {
              id: 1,
              name: "Ada Lovelace",
            }],
          }),
        );
        assert.equal(answer.inserted, 1);
        assert.equal(answer.updated, 2);
        assert.deepEqual(await rows(`SELECT name, city FROM people WHERE id = 1`), [
          { name: "Ada Lovelace", city: "London" },
        ]);
      },
    );

    await t.step("a batch whose last row is bad leaves zero rows; bad JSON is 400", async () => {
      const before = await count("people");
      const body = Array.from({ length: 500 }, (_, i) => ({ id: 100 + i, name: `n${i}` }));
      body.push({ id: 999, name: "bad", age: "old" } as never);
      const error = errorOf(await server.request("POST", "table/people/records", { body }), 422);
      assert.deepEqual(error.details, [
        { row: 500, column: "age", message: 'Value "old" is not a valid smallint' },
      ]);
      errorOf(
        await server.request("POST", "table/people/records", {
          body: "[{",
          headers: { "content-type": "application/json" },
        }),
        400,
      );
      assert.equal(await count("people"), before);
      const empty = ok(await server.request("POST", "table/people/records", { body: [] }));
      assert.equal(empty.inserted, 0);
      errorOf(await server.request("POST", "table/nobody/records", { body: [{ a: 1 }] }), 404);
    });

    await t.step("upload/json: fail, append (positional), replace, mismatch", async () => {
      const made = ok(
        await server.request("POST", "table/up/upload/json", {
          body: { table: people, data: [{ id: 1, name: "Ada" }, { id: 2, name: "Grace" }] },
        }),
      );
      assert.equal(made.inserted, 2);
      errorOf(await server.request("POST", "table/up/upload/json", { body: { data: [] } }), 409);
      const appended = ok(
        await server.request("POST", "table/up/upload/json?if_exists=append", {
          body: { data: [[3, "Linus", 54], [4, "Ken"]] },
        }),
      );
      assert.equal(appended.inserted, 2);
      errorOf(
        await server.request("POST", "table/up/upload/json?if_exists=append", {
          body: { table: { columns: [{ name: "id", type: "text" }] }, data: [] },
        }),
        422,
      );
      const clash = errorOf(
        await server.request("POST", "table/up/upload/json?if_exists=append", {
          body: { data: [[5, "x"], [1, "y"]] },
        }),
        409,
      );
      assert.deepEqual(clash.details?.map((d) => (d as { row: number }).row), [1]);
      assert.equal(await count("up"), 4);
      const replaced = ok(
        await server.request("POST", "table/up/upload/json?if_exists=replace", {
          body: {
            data: [[1.5, "x"]],
            table: {
              columns: [{ name: "score", type: "double" }, { name: "tag", type: "text" }],
            },
          },
        }),
      );
      assert.deepEqual(
        replaced.table.columns.map((c: { id: number; name: string }) => [c.id, c.name]),
        [[1, "score"], [2, "tag"]],
      );
      assert.deepEqual(await rows(`SELECT score, tag FROM up`), [{ score: 1.5, tag: "x" }]);
    });

    await t.step("upload/csv infers the columns and loads quoted text", async () => {
      const csv = 'id,name,when\n1,"Lovelace, Ada",2024-01-02\n2,"say ""hi""",\n';
      const answer = ok(
        await server.request("POST", "table/csvup/upload/csv", {
          body: uploadForm(new TextEncoder().encode(csv), "rows.csv"),
        }),
      );
      assert.equal(answer.inserted, 2);
      assert.deepEqual(answer.table.columns.map((c: { type: string }) => c.type), [
        "bigint",
        "character varying",
        "date",
      ]);
      assert.deepEqual(await rows(`SELECT name, "when"::text FROM csvup ORDER BY id`), [
        { name: "Lovelace, Ada", when: "2024-01-02" },
        { name: 'say "hi"', when: null },
      ]);
    });
  } finally {
    await db.close();
    await server.dispose();
  }
});
