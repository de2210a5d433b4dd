import assert from "node:assert/strict";
import { errorOf, ok, snapshot, TestServer } from "./helpers/server.ts";

const INJECTIONS = [
  `a"; DROP TABLE victim; --`,
  `a'); DROP TABLE victim; --`,
  `" OR 1=1 --`,
  `x" INTEGER, "y`,
  `'; SELECT * FROM read_csv('/etc/passwd'); --`,
  `$1`,
  `\\"`,
  `Robert'); DROP TABLE Students;--`,
  `victim" CASCADE; --`,
  `零件 "单价"`,
];

Deno.test("hostile: injection text in column and constraint names is stored literally and harms nothing", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/victim", {
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
    ok(await server.request("GET", "table/victim"));
    assert.equal(ok(await server.request("GET", "table")).total, 2);
  } finally {
    await server.dispose();
  }
});

Deno.test("hostile: injection in every other field is refused and leaves the database as it was", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/victim", {
        body: {
          table: {
            columns: [{ name: "id", type: "integer" }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    const before = await snapshot(server);
    const requests: [string, string, unknown?][] = [];
    for (const text of INJECTIONS) {
      const encoded = encodeURIComponent(text);
      requests.push(
        ["POST", `table/${encoded}`, {}],
        ["GET", `table/${encoded}`],
        ["DELETE", `table/${encoded}`],
        ["POST", `table/t?schema=${encoded}`, {}],
        ["GET", `table?schema=${encoded}`],
        ["POST", `schema/${encoded}`],
        ["DELETE", `schema/${encoded}?cascade=true`],
        ["POST", "table/t", { table: { columns: [{ name: "a", type: text }] } }],
        ["POST", "table/t", {
          table: { columns: [{ name: "a", type: "int", default: `1); DROP TABLE victim; --` }] },
        }],
        ["POST", "table/t", {
          table: { columns: [{ name: "a", type: "varchar", default: `'${text}` }] },
        }],
        ["POST", "table/t", {
          table: {
            columns: [{ name: "a", type: "int" }],
            constraints: {
              foreign_keys: [{ column: "a", reference_table: text, reference_column: "id" }],
            },
          },
        }],
        ["POST", "table/t", {
          table: {
            columns: [{ name: "a", type: "int" }],
            constraints: {
              foreign_keys: [{ column: "a", reference_table: "victim", reference_column: text }],
            },
          },
        }],
        ["POST", "table/t", {
          table: {
            columns: [{ name: "a", type: "int" }],
            constraints: {
              foreign_keys: [{
                column: "a",
                reference_table: "victim",
                reference_column: "id",
                reference_schema: text,
              }],
            },
          },
        }],
        ["POST", "table/t", {
          table: {
            columns: [{ name: "a", type: "int" }],
            constraints: { primary_key: { columns: [text] } },
          },
        }],
        ["GET", `table?limit=${encoded}`],
        ["GET", `table?offset=${encoded}`],
        ["GET", `table?verbose=${encoded}`],
        ["POST", `table/t?if_not_exists=${encoded}`, {}],
        ["DELETE", `schema/public?cascade=${encoded}`],
      );
    }
    let refused = 0;
    for (const [method, path, body] of requests) {
      const answer = await server.request(method, path, body === undefined ? {} : { body });
      assert.ok(
        answer.status >= 400 && answer.status < 500,
        `${method} ${path}: ${answer.status} ${answer.text}`,
      );
      errorOf(answer, answer.status);
      refused++;
    }
    assert.equal(refused, requests.length);
    assert.equal(await snapshot(server), before);
    ok(await server.request("GET", "table/victim"));
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
