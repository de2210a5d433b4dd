import assert from "node:assert/strict";
import { errorOf, ok, snapshot, TestServer } from "./helpers/server.ts";

Deno.test("schemas: list, create, delete with and without cascade", async (t) => {
  const server = await TestServer.start();
  try {
    await t.step("public exists from the start; internal schemas never show", async () => {
      assert.deepEqual(ok(await server.request("GET", "schema")), {
        schemas: [{ name: "public" }],
      });
    });

    await t.step("POST /schema/{name} creates; an existing name (any case) is 409", async () => {
      assert.deepEqual(ok(await server.request("POST", "schema/Sales")), {
        schema: "Sales",
        message: 'Schema "Sales" created',
      });
      errorOf(await server.request("POST", "schema/sales"), 409);
      errorOf(await server.request("POST", "schema/public"), 409);
      const { schemas } = ok(await server.request("GET", "schema/"));
      assert.deepEqual(schemas, [{ name: "public" }, { name: "Sales" }]);
    });

    await t.step("public cannot be dropped; a missing schema is 404", async () => {
      errorOf(await server.request("DELETE", "schema/public"), 409);
      errorOf(await server.request("DELETE", "schema/PUBLIC?cascade=true"), 409);
      errorOf(await server.request("DELETE", "schema/nowhere"), 404);
    });

    await t.step(
      "a schema with tables is 409 unless cascade=true, which drops them too",
      async () => {
        ok(
          await server.request("POST", "table/a?schema=sales", {
            body: {
              table: {
                columns: [{ name: "id", type: "serial" }, { name: "b", type: "int" }],
                constraints: { primary_key: { columns: ["id"] } },
              },
            },
          }),
        );
        ok(
          await server.request("POST", "table/b?schema=sales", {
            body: {
              table: {
                columns: [{ name: "a_id", type: "int" }],
                constraints: {
                  foreign_keys: [{
                    column: "a_id",
                    reference_table: "a",
                    reference_column: "id",
                    reference_schema: "sales",
                  }],
                },
              },
            },
          }),
        );
        const error = errorOf(await server.request("DELETE", "schema/sales"), 409);
        assert.match(error.message, /cascade/);
        errorOf(await server.request("DELETE", "schema/sales?cascade=nope"), 400);
        assert.equal(ok(await server.request("GET", "table?schema=sales")).total, 2);
        assert.deepEqual(ok(await server.request("DELETE", "schema/sales?cascade=True")), {
          schema: "Sales",
          message: 'Schema "Sales" deleted',
        });
        assert.deepEqual(ok(await server.request("GET", "schema")), {
          schemas: [{ name: "public" }],
        });
        errorOf(await server.request("GET", "table/a?schema=sales"), 404);
        assert.equal(ok(await server.request("GET", "table")).total, 0);
      },
    );

    await t.step("cascade drops only the schema's own tables", async () => {
      ok(await server.request("POST", "schema/s2"));
      ok(
        await server.request("POST", "table/t?schema=s2", {
          body: { table: { columns: [{ name: "id", type: "bigserial" }] } },
        }),
      );
      ok(
        await server.request("POST", "table/keep", {
          body: { table: { columns: [{ name: "id", type: "bigserial" }] } },
        }),
      );
      errorOf(
        await server.request("POST", "table/thief", {
          body: {
            table: { columns: [{ name: "x", type: "bigint", default: "nextval('s2.t_id_seq')" }] },
          },
        }),
        422,
      );
      const before = ok(await server.request("GET", "table/keep"));
      ok(await server.request("DELETE", "schema/s2?cascade=true"));
      assert.deepEqual(ok(await server.request("GET", "table/keep")), before);
      ok(await server.request("DELETE", "table/keep"));
    });

    await t.step("a schema dropped with its tables can be created again, empty", async () => {
      ok(await server.request("POST", "schema/sales"));
      assert.equal(ok(await server.request("GET", "table?schema=sales")).total, 0);
      ok(await server.request("POST", "table/a?schema=sales", { body: {} }));
      ok(await server.request("DELETE", "table/a?schema=sales"));
      ok(await server.request("DELETE", "schema/sales"));
    });

    await t.step("hostile schema names are 400 and change nothing", async () => {
      const before = await snapshot(server);
      for (
        const name of [
          "x;DROP%20SCHEMA%20public",
          "%22public%22",
          "a.b",
          "_table_service",
          "main",
          "pg_catalog",
          "information_schema",
          "a".repeat(64),
          "%00",
          "%E2%80%AEevil",
        ]
      ) {
        errorOf(await server.request("POST", `schema/${name}`), 400);
        errorOf(await server.request("DELETE", `schema/${name}?cascade=true`), 400);
      }
      assert.equal(await snapshot(server), before);
    });
  } finally {
    await server.dispose();
  }
});
