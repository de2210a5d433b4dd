import assert from "node:assert/strict";
import { errorOf, ok, TestServer } from "./helpers/server.ts";
import { INJECTIONS } from "./reliability/hostile.ts";

Deno.test("hostile: injection text in column and constraint names is stored literally and harms nothing", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/items", {
        body: {
          table: {
            columns: [{ name: "id", type: "integer" }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    const columns = INJECTIONS.map((name) => ({ name, type: "varchar", default: "'x'" }));
    const { table } = ok(
      await server.request("POST", "table/hostile", {
        body: {
          table: {
            columns: [{ name: "id", type: "integer" }, ...columns],
            constraints: {
              primary_key: { name: INJECTIONS[0], columns: ["id"] },
              unique: INJECTIONS.slice(1, 4).map((name, i) => ({
                name,
                columns: [INJECTIONS[i + 1]],
              })),
              foreign_keys: [{
                name: INJECTIONS[5],
                column: INJECTIONS[4],
                reference_table: "hostile",
                reference_column: INJECTIONS[1],
              }],
            },
          },
        },
      }),
    );
    assert.deepEqual(table.columns.slice(1).map((c: { name: string }) => c.name), INJECTIONS);
    assert.equal(table.constraints.primary_key.name, INJECTIONS[0]);
    assert.deepEqual(
      table.constraints.unique.map((u: { name: string }) => u.name),
      INJECTIONS.slice(1, 4),
    );
    assert.equal(table.constraints.foreign_keys[0].name, INJECTIONS[5]);
    assert.deepEqual(ok(await server.request("GET", "table/hostile")).table, table);
    ok(await server.request("GET", "table/items"));
    assert.equal(ok(await server.request("GET", "table")).total, 2);
  } finally {
    await server.dispose();
  }
});

Deno.test("concurrency: racing DDL is serialised, answered 200 or 409, never 5xx", async (t) => {
  const server = await TestServer.start();
  try {
    await t.step("ten clients create the same table: one wins, nine get 409", async () => {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          server.request("POST", "table/race", {
            body: {
              table: {
                columns: [{ name: "id", type: "serial" }],
                constraints: { primary_key: { columns: ["id"] } },
              },
            },
          })),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, ...Array(9).fill(409)]);
    });

    await t.step("twenty tables referencing one parent are created at once", async () => {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          server.request("POST", `table/child${i}`, {
            body: {
              table: {
                columns: [{ name: "parent", type: "integer" }],
                constraints: {
                  foreign_keys: [{
                    column: "parent",
                    reference_table: "race",
                    reference_column: "id",
                  }],
                },
              },
            },
          })),
      );
      assert.deepEqual(answers.map((a) => a.status), Array(20).fill(200));
      errorOf(await server.request("DELETE", "table/race"), 409);
    });

    await t.step("creates, drops and a schema drop racing each other", async () => {
      ok(await server.request("POST", "schema/busy"));
      const work = [
        ...Array.from(
          { length: 15 },
          (_, i) => server.request("POST", `table/b${i}?schema=busy`, { body: {} }),
        ),
        ...Array.from({ length: 10 }, (_, i) => server.request("DELETE", `table/child${i}`)),
        server.request("DELETE", "schema/busy?cascade=true"),
        ...Array.from({ length: 15 }, (_, i) => server.request("GET", `table/child${i}`)),
      ];
      const answers = await Promise.all(work);
      for (const answer of answers) assert.ok([200, 404, 409].includes(answer.status), answer.text);
      const listing = ok(await server.request("GET", "table?limit=1000"));
      for (const table of listing.tables) {
        ok(await server.request("GET", `table/${table.name}?schema=${table.schema}`));
      }
    });
  } finally {
    await server.dispose();
  }
});
