import assert from "node:assert/strict";
import { ENGINE } from "./helpers/engine.ts";
import { cellsOf, errorOf, mint, ok, snapshot, TestServer } from "./helpers/server.ts";
import { KEYED_CUSTOMERS_TABLE } from "./fixtures/tables.ts";
import { columnsOf, put } from "./helpers/table_requests.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * A customer id no test ever stores. Serial ids skip the values that failed inserts drew, so
 * a small id such as 7 may belong to a real customer after a few refused batches.
 */
const NO_CUSTOMER = 424242;

const customers = KEYED_CUSTOMERS_TABLE;

const customerRows = [
  { email: "a@x.org", name: "Ann", score: "10" },
  { email: "b@x.org", name: null, score: "20" },
  { email: "c@x.org", name: "Cy", score: null },
];

/** Everything a refusal must leave alone: every definition and every table's rows. */
async function state(server: TestServer): Promise<string> {
  const { tables } = ok(await server.request("GET", "table?verbose=true&limit=1000"));
  const rows = [];
  for (const t of tables) {
    rows.push(ok(await server.request("GET", `table/${t.name}/records?schema=${t.schema}`)));
  }
  return JSON.stringify({ definitions: await snapshot(server), rows });
}

async function records(server: TestServer, name: string, schema = "public"): Promise<Json[]> {
  return ok(await server.request("GET", `table/${name}/records?schema=${schema}&limit=1000`))
    .records;
}

async function withCustomers(
  steps: (server: TestServer) => Promise<void>,
): Promise<void> {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/customers", { body: { table: customers } }));
    // One request per row: within one batch DuckDB may draw serial values out of row order.
    for (const row of customerRows) {
      ok(await server.request("POST", "table/customers/records", { body: [row] }));
    }
    await steps(server);
  } finally {
    await server.dispose();
  }
}

/** Asserts the request is refused with `status` and that nothing changed. */
async function refused(
  server: TestServer,
  send: () => Promise<Json>,
  status: number,
  message: RegExp,
): Promise<Json> {
  const before = await state(server);
  const error = errorOf(await send(), status);
  assert.match(error.message, message);
  assert.equal(await state(server), before);
  return error;
}

Deno.test("PUT /table/{name}: each kind of change alone keeps rows and column ids", async (t) => {
  await withCustomers(async (server) => {
    await t.step("a GET response sent back unchanged is a no-op", async () => {
      const before = await state(server);
      const got = ok(await server.request("GET", "table/customers"));
      const answer = ok(await put(server, "customers", got.table));
      assert.deepEqual(answer, got);
      assert.equal(await state(server), before);
      // Clients in the field send null for every field they were not given.
      const nulls = ok(
        await put(server, "customers", { name: null, schema: null, columns: null }),
      );
      assert.deepEqual(nulls, got);
    });

    await t.step("renaming a column keeps its id and its values", async () => {
      const columns = await columnsOf(server, "customers");
      columns[2].name = "Full Name";
      const { table } = ok(await put(server, "customers", { columns }));
      assert.deepEqual(table.columns.map((c: Json) => [c.id, c.name]), [
        [1, "id"],
        [2, "email"],
        [3, "Full Name"],
        [4, "score"],
      ]);
      assert.deepEqual((await records(server, "customers")).map((r) => r["Full Name"]), [
        "Ann",
        null,
        "Cy",
      ]);
    });

    await t.step("retyping casts the existing values", async () => {
      const columns = await columnsOf(server, "customers");
      columns[3].type = "integer";
      const { table } = ok(await put(server, "customers", { columns }));
      assert.equal(table.columns[3].type, ENGINE === "postgres" ? "integer" : "INTEGER");
      assert.equal(table.columns[3].id, 4);
      assert.deepEqual((await records(server, "customers")).map((r) => r.score), [10, 20, null]);
    });

    await t.step(
      "a failing cast is 422 naming the first failing rows, and changes nothing",
      async () => {
        const columns = await columnsOf(server, "customers");
        columns[1].type = "integer";
        const error = await refused(
          server,
          () => put(server, "customers", { columns }),
          422,
          ENGINE === "postgres" ? /cannot be cast to integer/ : /cannot be cast to INTEGER/,
        );
        assert.deepEqual(error.details!.map((d: Json) => [d.row, d.column, d.value]), [
          [0, "email", "a@x.org"],
          [1, "email", "b@x.org"],
          [2, "email", "c@x.org"],
        ]);
      },
    );

    await t.step("a type DuckDB cannot convert to at all is 422 and changes nothing", async () => {
      const columns = await columnsOf(server, "customers");
      columns[3].type = "integer[]";
      if (ENGINE === "postgres") {
        // PostgreSQL has no cast from integer to integer[]: the column is named, not its rows.
        const error = await refused(
          server,
          () => put(server, "customers", { columns }),
          422,
          /Column "score" cannot be converted from integer to integer\[\]/,
        );
        assert.deepEqual(error.details!.map((d: Json) => d.column), ["score"]);
        // STRUCT is a type PostgreSQL lacks: 422 naming it.
        const struct = errorOf(
          await server.request("POST", "table/shapes", {
            body: { table: { columns: [{ name: "s", type: "struct(a integer)" }] } },
          }),
          422,
        );
        assert.match(struct.message, /Column "s": Type "STRUCT/);
        return;
      }
      const error = await refused(
        server,
        () => put(server, "customers", { columns }),
        422,
        /cannot be cast to INTEGER\[\]/,
      );
      assert.deepEqual(error.details!.map((d: Json) => d.row), [0, 1]);
      ok(
        await server.request("POST", "table/shapes", {
          body: { table: { columns: [{ name: "s", type: "struct(a integer)" }] } },
        }),
      );
      ok(await server.request("POST", "table/shapes/records", { body: [{ s: { a: 1 } }] }));
      await refused(
        server,
        () => put(server, "shapes", { columns: [{ id: 1, name: "s", type: "struct(b integer)" }] }),
        422,
        /cannot be converted from STRUCT\(a INTEGER\) to STRUCT\(b INTEGER\)/,
      );
      ok(await server.request("DELETE", "table/shapes"));
    });

    await t.step("a default can be set and dropped; existing rows keep their values", async () => {
      const columns = await columnsOf(server, "customers");
      columns[3].default = "42";
      const { table } = ok(await put(server, "customers", { columns }));
      assert.equal(table.columns[3].default, "42");
      ok(await server.request("POST", "table/customers/records", { body: [{ email: "d@x.org" }] }));
      assert.deepEqual((await records(server, "customers")).map((r) => r.score), [
        10,
        20,
        null,
        42,
      ]);
      columns[3].default = null;
      const dropped = ok(await put(server, "customers", { columns }));
      assert.equal(dropped.table.columns[3].default, null);
    });

    await t.step(
      "NOT NULL is refused while nulls exist, with their rows, and then set",
      async () => {
        const columns = await columnsOf(server, "customers");
        columns[2].is_nullable = false;
        const error = await refused(
          server,
          () => put(server, "customers", { columns }),
          422,
          /is null/,
        );
        assert.deepEqual(cellsOf(error), [
          [1, "Full Name"],
          [3, "Full Name"],
        ]);
        const fixed = await columnsOf(server, "customers");
        fixed[3].is_nullable = false;
        fixed[3].default = "0";
        const failing = await refused(
          server,
          () => put(server, "customers", { columns: fixed }),
          422,
          /is null/,
        );
        assert.equal(failing.details!.length, 1);
        ok(
          await server.request("POST", "table/customers/records?on_conflict=update", {
            body: [{ id: 3, email: "c@x.org", score: 30 }],
          }),
        );
        const { table } = ok(await put(server, "customers", { columns: fixed }));
        assert.equal(table.columns[3].is_nullable, false);
        fixed[3].is_nullable = true;
        const relaxed = ok(await put(server, "customers", { columns: fixed }));
        assert.equal(relaxed.table.columns[3].is_nullable, true);
      },
    );

    await t.step("new columns get new ids and their default in every existing row", async () => {
      const columns = await columnsOf(server, "customers");
      const { table } = ok(
        await put(server, "customers", {
          columns: [
            ...columns,
            { name: "country", type: "varchar", default: "'NL'", is_nullable: false },
            { name: "note", type: "text" },
          ],
        }),
      );
      assert.deepEqual(table.columns.map((c: Json) => c.id), [1, 2, 3, 4, 5, 6]);
      const rows = await records(server, "customers");
      assert.deepEqual(rows.map((r) => [r.country, r.note]), [
        ["NL", null],
        ["NL", null],
        ["NL", null],
        ["NL", null],
      ]);
    });

    await t.step(
      "a new NOT NULL column without default is refused on a table with rows",
      async () => {
        const columns = await columnsOf(server, "customers");
        await refused(
          server,
          () =>
            put(server, "customers", {
              columns: [...columns, { name: "must", type: "int", is_nullable: false }],
            }),
          422,
          /NOT NULL without a default/,
        );
      },
    );

    await t.step("a dropped column's id is never reused", async () => {
      const columns = await columnsOf(server, "customers");
      const { table } = ok(
        await put(server, "customers", {
          columns: [...columns.filter((c: Json) => c.name !== "note"), {
            name: "later",
            type: "boolean",
          }],
        }),
      );
      assert.deepEqual(table.columns.map((c: Json) => [c.id, c.name]).slice(4), [
        [5, "country"],
        [7, "later"],
      ]);
      assert.equal("note" in (await records(server, "customers"))[0], false);
    });

    await t.step("column order follows the request, in the definition and the rows", async () => {
      const columns = await columnsOf(server, "customers");
      const reordered = [columns[1], columns[0], ...columns.slice(2).reverse()];
      const { table } = ok(await put(server, "customers", { columns: reordered }));
      assert.deepEqual(table.columns.map((c: Json) => c.id), [2, 1, 7, 5, 4, 3]);
      const [first] = await records(server, "customers");
      assert.deepEqual(Object.keys(first), [
        "email",
        "id",
        "later",
        "country",
        "score",
        "Full Name",
      ]);
      assert.deepEqual(first, {
        email: "a@x.org",
        id: 1,
        later: null,
        country: "NL",
        score: 10,
        "Full Name": "Ann",
      });
    });

    await t.step("renaming the table moves rows and definition to the new name", async () => {
      const before = await records(server, "customers");
      const { table } = ok(await put(server, "customers", { name: "clients" }));
      assert.equal(table.name, "clients");
      errorOf(await server.request("GET", "table/customers"), 404);
      assert.deepEqual(await records(server, "clients"), before);
      // The serial column keeps drawing from its sequence.
      ok(await server.request("POST", "table/clients/records", { body: [{ email: "e@x.org" }] }));
      assert.equal((await records(server, "clients")).at(-1).id, 5);
    });

    await t.step(
      "moving the table to another schema keeps rows, ids and its sequence",
      async () => {
        ok(await server.request("POST", "schema/archive"));
        const before = await records(server, "clients");
        const ids = (await columnsOf(server, "clients")).map((c: Json) => c.id);
        const { table } = ok(
          await put(server, "clients", { schema: "ARCHIVE", name: "old_clients" }),
        );
        assert.equal(table.schema, "archive");
        assert.deepEqual(table.columns.map((c: Json) => c.id), ids);
        assert.match(table.columns[1].default, /^nextval\('archive\./);
        assert.deepEqual(await records(server, "old_clients", "archive"), before);
        ok(
          await server.request("POST", "table/old_clients/records?schema=archive", {
            body: [{ email: "f@x.org" }],
          }),
        );
        assert.equal((await records(server, "old_clients", "archive")).at(-1).id, 6);
        // The old schema can go now: nothing there is still used.
        ok(
          await server.request("PUT", "table/old_clients?schema=archive", {
            body: { table: { schema: "public", name: "customers" } },
          }),
        );
        ok(await server.request("DELETE", "schema/archive"));
      },
    );
  });
});

Deno.test("PUT /table/{name}: constraints are replaced by the wanted set", async (t) => {
  await withCustomers(async (server) => {
    await t.step("omitted constraints stay, following renamed columns", async () => {
      const columns = await columnsOf(server, "customers");
      columns[1].name = "mail";
      const { table } = ok(await put(server, "customers", { columns }));
      assert.deepEqual(table.constraints.unique, [{
        name: "customers_email_key",
        columns: ["mail"],
      }]);
      errorOf(
        await server.request("POST", "table/customers/records", { body: [{ mail: "a@x.org" }] }),
        409,
      );
    });

    await t.step("a duplicate for a new unique constraint is 409 naming it", async () => {
      ok(
        await server.request("POST", "table/customers/records", {
          body: [{ mail: "z@x.org", name: "Ann" }],
        }),
      );
      const error = await refused(
        server,
        () =>
          put(server, "customers", {
            constraints: {
              primary_key: { columns: ["id"] },
              unique: [{ columns: ["mail"] }, { name: "one_name", columns: ["name"] }],
            },
          }),
        409,
        /one_name/,
      );
      assert.deepEqual(error.details!.map((d: Json) => [d.row, d.value]), [[3, "Ann"]]);
    });

    await t.step("keys can be dropped and added", async () => {
      const { table } = ok(
        await put(server, "customers", {
          constraints: { unique: [{ name: "by_score", columns: ["score"] }] },
        }),
      );
      assert.deepEqual(table.constraints, {
        primary_key: null,
        unique: [{ name: "by_score", columns: ["score"] }],
        foreign_keys: [],
      });
      // The old unique key is gone: a repeated mail is accepted now.
      ok(await server.request("POST", "table/customers/records", { body: [{ mail: "a@x.org" }] }));
      const restored = ok(
        await put(server, "customers", { constraints: { primary_key: { columns: ["id"] } } }),
      );
      assert.deepEqual(restored.table.constraints.primary_key, {
        name: "customers_pkey",
        columns: ["id"],
      });
    });

    await t.step(
      "a new foreign key with orphans is 422 naming it; without them it holds",
      async () => {
        ok(
          await server.request("POST", "table/orders", {
            body: {
              table: {
                columns: [{ name: "id", type: "int" }, { name: "customer", type: "int" }],
              },
            },
          }),
        );
        ok(
          await server.request("POST", "table/orders/records", {
            body: [{ id: 1, customer: 1 }, { id: 2, customer: 99 }, { id: 3, customer: null }],
          }),
        );
        const fk = { column: "customer", reference_table: "customers", reference_column: "id" };
        const error = await refused(
          server,
          () => put(server, "orders", { constraints: { foreign_keys: [fk] } }),
          422,
          /orders_customer_fkey/,
        );
        assert.deepEqual(error.details!.map((d: Json) => [d.row, d.value]), [[1, "99"]]);
        ok(
          await server.request("POST", "table/customers/records", {
            body: [{ id: 99, mail: "n" }],
          }),
        );
        const { table } = ok(await put(server, "orders", { constraints: { foreign_keys: [fk] } }));
        assert.equal(table.constraints.foreign_keys[0].name, "orders_customer_fkey");
        errorOf(
          await server.request("POST", "table/orders/records", {
            body: [{ id: 4, customer: NO_CUSTOMER }],
          }),
          422,
        );
      },
    );

    await t.step(
      "a rebuild of a referenced table keeps the references and their rows",
      async () => {
        const columns = await columnsOf(server, "customers");
        const { table } = ok(
          await put(server, "customers", {
            name: "people",
            columns: [...columns.reverse(), { name: "vip", type: "boolean", default: "false" }],
          }),
        );
        assert.equal(table.columns.at(-1).id, 5);
        const orders = ok(await server.request("GET", "table/orders")).table;
        assert.deepEqual(orders.constraints.foreign_keys, [{
          name: "orders_customer_fkey",
          column: "customer",
          reference_table: "people",
          reference_column: "id",
          reference_schema: "public",
        }]);
        assert.deepEqual((await records(server, "orders")).map((r) => r.customer), [1, 99, null]);
        errorOf(
          await server.request("POST", "table/orders/records", {
            body: [{ id: 5, customer: NO_CUSTOMER }],
          }),
          422,
        );
        errorOf(await server.request("DELETE", "table/people"), 409);
      },
    );

    await t.step("what a foreign key of another table needs cannot go: 409 naming it", async () => {
      const columns = await columnsOf(server, "people");
      const idIndex = columns.findIndex((c: Json) => c.name === "id");
      await refused(
        server,
        () =>
          put(server, "people", { columns: columns.filter((_: Json, i: number) => i !== idIndex) }),
        409,
        /orders_customer_fkey/,
      );
      const retyped = structuredClone(columns);
      retyped[idIndex].type = "bigint";
      await refused(server, () => put(server, "people", { columns: retyped }), 409, /type/);
      await refused(
        server,
        () => put(server, "people", { constraints: { primary_key: null } }),
        409,
        /primary key or unique/,
      );
      ok(await server.request("POST", "schema/elsewhere"));
      await refused(
        server,
        () => put(server, "people", { schema: "elsewhere" }),
        409,
        /stay within a schema/,
      );
    });

    await t.step("a table referencing itself is rebuilt row level by row level", async () => {
      ok(
        await server.request("POST", "table/tree", {
          body: {
            table: {
              columns: [{ name: "id", type: "int" }, { name: "parent", type: "int" }],
              constraints: {
                primary_key: { columns: ["id"] },
                foreign_keys: [{
                  column: "parent",
                  reference_table: "tree",
                  reference_column: "id",
                }],
              },
            },
          },
        }),
      );
      for (const [id, parent] of [[1, null], [2, 1], [3, 2], [4, 2]]) {
        ok(await server.request("POST", "table/tree/records", { body: [{ id, parent }] }));
      }
      const columns = await columnsOf(server, "tree");
      const { table } = ok(
        await put(server, "tree", {
          name: "forest",
          columns: [columns[1], columns[0], { name: "label", type: "varchar", default: "'leaf'" }],
        }),
      );
      assert.deepEqual(table.constraints.foreign_keys[0], {
        name: "tree_parent_fkey",
        column: "parent",
        reference_table: "forest",
        reference_column: "id",
        reference_schema: "public",
      });
      assert.deepEqual(
        (await records(server, "forest")).map((r) => [r.id, r.parent, r.label]),
        [[1, null, "leaf"], [2, 1, "leaf"], [3, 2, "leaf"], [4, 2, "leaf"]],
      );
      errorOf(
        await server.request("POST", "table/forest/records", { body: [{ id: 9, parent: 8 }] }),
        422,
      );
    });
  });
});

Deno.test("PUT /table/{name}: combined changes, empty tables and refusals", async (t) => {
  await withCustomers(async (server) => {
    await t.step("every kind of change in one request", async () => {
      const columns = await columnsOf(server, "customers");
      const { table } = ok(
        await put(server, "customers", {
          name: "members",
          columns: [
            { ...columns[3], name: "points", type: "bigint", default: "0" },
            { ...columns[0] },
            { ...columns[1], name: "mail" },
            { name: "joined", type: "date", default: "'2026-01-01'" },
          ],
          constraints: {
            primary_key: { columns: ["id"] },
            unique: [{ columns: ["mail"] }, { columns: ["points"] }],
          },
        }),
      );
      assert.deepEqual(
        table.columns.map((c: Json) => [c.id, c.name, c.type]),
        ENGINE === "postgres"
          ? [
            [4, "points", "bigint"],
            [1, "id", "integer"],
            [2, "mail", "character varying"],
            [5, "joined", "date"],
          ]
          : [
            [4, "points", "BIGINT"],
            [1, "id", "INTEGER"],
            [2, "mail", "VARCHAR"],
            [5, "joined", "DATE"],
          ],
      );
      assert.deepEqual(table.constraints.unique.map((k: Json) => k.name), [
        "members_mail_key",
        "members_points_key",
      ]);
      assert.deepEqual(await records(server, "members"), [
        { points: 10, id: 1, mail: "a@x.org", joined: "2026-01-01" },
        { points: 20, id: 2, mail: "b@x.org", joined: "2026-01-01" },
        { points: null, id: 3, mail: "c@x.org", joined: "2026-01-01" },
      ]);
    });

    await t.step("a zero-column table gains its first columns and keeps its rows", async () => {
      ok(await server.request("POST", "table/blank", { body: {} }));
      ok(await server.request("POST", "table/blank/records", { body: [{}, {}, {}] }));
      const { table } = ok(
        await put(server, "blank", {
          columns: [{ name: "n", type: "serial" }, {
            name: "tag",
            type: "varchar",
            default: "'t'",
          }],
          constraints: { primary_key: { columns: ["n"] } },
        }),
      );
      assert.deepEqual(table.columns.map((c: Json) => [c.id, c.name]), [[1, "n"], [2, "tag"]]);
      assert.deepEqual(await records(server, "blank"), [
        { n: 1, tag: "t" },
        { n: 2, tag: "t" },
        { n: 3, tag: "t" },
      ]);
      ok(await server.request("POST", "table/blank/records", { body: [{ tag: "new" }] }));
      assert.equal((await records(server, "blank")).at(-1).n, 4);
      const emptied = ok(await put(server, "blank", { columns: [] }));
      assert.deepEqual(emptied.table.columns, []);
      assert.equal(ok(await server.request("GET", "table/blank/records")).total, 4);
      const again = ok(await put(server, "blank", { columns: [{ name: "n", type: "int" }] }));
      assert.deepEqual(again.table.columns.map((c: Json) => c.id), [3]);
    });

    await t.step("unknown or repeated ids and serial on an existing column are 422", async () => {
      const columns = await columnsOf(server, "members");
      const cases: [unknown[], RegExp][] = [
        [[...columns, { ...columns[0], id: 77 }], /Column id 77/],
        [[...columns, { ...columns[0], name: "again" }], /given twice/],
        [[{ ...columns[1], type: "serial" }], /serial/],
        [
          [{ ...columns[1], type: "no_such_type" }],
          ENGINE === "postgres" ? /Type "NO_SUCH_TYPE" is unknown/ : /unknown type/,
        ],
        [[{ ...columns[1], default: "1; DROP TABLE x" }], /Default/],
        [[...columns, { ...columns[2], id: null }], /more than once/],
      ];
      for (const [wanted, message] of cases) {
        await refused(server, () => put(server, "members", { columns: wanted }), 422, message);
      }
    });

    await t.step("bad names and shapes are 400, missing targets 404, taken names 409", async () => {
      await refused(server, () => put(server, "members", { name: "bad name" }), 400, /Table name/);
      await refused(server, () => put(server, "members", { schema: "main" }), 400, /reserved/);
      await refused(server, () => put(server, "members", { schema: "nowhere" }), 404, /nowhere/);
      await refused(server, () => put(server, "nobody", {}), 404, /nobody/);
      await refused(server, () => put(server, "members", { columns: "all" }), 400, /columns/);
      await refused(
        server,
        () => put(server, "members", { columns: [{ id: "1", name: "id", type: "int" }] }),
        400,
        /id/,
      );
      await refused(
        server,
        () => server.request("PUT", "table/members", { body: { columns: [] } }),
        400,
        /table/,
      );
      ok(await server.request("POST", "table/taken", { body: {} }));
      await refused(server, () => put(server, "members", { name: "TAKEN" }), 409, /exists/);
    });

    await t.step("a token confined to schemas may not move a table out of them", async () => {
      ok(await server.request("POST", "schema/secret"));
      const token = await mint({ scope: "tables:write", schemas: ["public"] });
      const before = await state(server);
      errorOf(
        await server.request("PUT", "table/members", {
          body: { table: { schema: "secret" } },
          token,
        }),
        403,
      );
      errorOf(
        await server.request("PUT", "table/members", {
          body: { table: {} },
          token: await mint({ scope: "tables:read" }),
        }),
        403,
      );
      assert.equal(await state(server), before);
    });

    await t.step("the update survives a restart", async () => {
      const before = await state(server);
      await server.restart();
      assert.equal(await state(server), before);
    });
  });
});

Deno.test("PUT /table/{name}: foreign keys stay whole through renames and rebuilds of either side", async (t) => {
  const server = await TestServer.start();
  const parent = {
    columns: [{ name: "id", type: "int" }],
    constraints: { primary_key: { columns: ["id"] } },
  };
  const child = (to: string) => ({
    columns: [{ name: "r", type: "int" }, { name: "v", type: "int" }],
    constraints: { foreign_keys: [{ column: "r", reference_table: to, reference_column: "id" }] },
  });
  const create = async (name: string, table: unknown) =>
    ok(await server.request("POST", `table/${name}`, { body: { table } }));
  try {
    await t.step("renaming a child, then its parent, leaves both droppable", async () => {
      await create("p", parent);
      await create("c", child("p"));
      ok(await server.request("POST", "table/p/records", { body: [{ id: 1 }] }));
      ok(await server.request("POST", "table/c/records", { body: [{ r: 1, v: 5 }] }));
      ok(await put(server, "c", { name: "c2" }));
      const { table } = ok(await put(server, "p", { name: "p2" }));
      assert.equal(table.name, "p2");
      assert.equal(
        ok(await server.request("GET", "table/c2")).table.constraints.foreign_keys[0]
          .reference_table,
        "p2",
      );
      errorOf(await server.request("POST", "table/c2/records", { body: [{ r: 9 }] }), 422);
      assert.deepEqual(await records(server, "c2"), [{ r: 1, v: 5 }]);
      errorOf(await server.request("DELETE", "table/p2"), 409);
      ok(await server.request("DELETE", "table/c2"));
      ok(await server.request("DELETE", "table/p2"));
    });

    await t.step(
      "a child rebuilt while renamed, or rebuilt without its key, frees its parent",
      async () => {
        await create("p", parent);
        await create("c", child("p"));
        const columns = await columnsOf(server, "c");
        ok(await put(server, "c", { name: "cz", columns: [...columns].reverse() }));
        ok(await put(server, "cz", { constraints: {} }));
        ok(await server.request("DELETE", "table/p"));
        ok(
          await server.request("POST", "table/p/upload/json?if_exists=replace", {
            body: { data: [{ id: 1 }] },
          }),
        );
        ok(await server.request("DELETE", "table/cz"));
        ok(await server.request("DELETE", "table/p"));
      },
    );

    await t.step("a renamed self-referencing table keeps taking rows", async () => {
      await create("items", {
        columns: [{ name: "id", type: "int" }, { name: "up", type: "int" }],
        constraints: {
          primary_key: { columns: ["id"] },
          foreign_keys: [{ column: "up", reference_table: "items", reference_column: "id" }],
        },
      });
      ok(await put(server, "items", { name: "items2" }));
      ok(await server.request("POST", "table/items2/records", { body: [{ id: 1 }] }));
      ok(await server.request("POST", "table/items2/records", { body: [{ id: 2, up: 1 }] }));
      ok(
        await server.request("POST", "table/items2/records?on_conflict=update", {
          body: [{ id: 2, up: null }],
        }),
      );
      errorOf(
        await server.request("POST", "table/items2/records", { body: [{ id: 3, up: 7 }] }),
        422,
      );
      ok(await server.request("DELETE", "table/items2"));
    });

    await t.step("a foreign key between different types is 422, not a failure", async () => {
      await create("p", parent);
      await create("loose", { columns: [{ name: "x", type: "varchar" }] });
      await refused(
        server,
        () =>
          put(server, "loose", {
            constraints: {
              foreign_keys: [{ column: "x", reference_table: "p", reference_column: "id" }],
            },
          }),
        422,
        /types must be equal/,
      );
      await create("c", child("p"));
      const columns = await columnsOf(server, "c");
      columns[0].type = "varchar";
      await refused(server, () => put(server, "c", { columns }), 422, /types must be equal/);
    });

    await t.step("a foreign key closing a cycle is 409", async () => {
      await create("m1", parent);
      await create("m2", {
        ...child("m1"),
        constraints: { ...child("m1").constraints, primary_key: { columns: ["r"] } },
      });
      await refused(
        server,
        () =>
          put(server, "m1", {
            constraints: {
              primary_key: { columns: ["id"] },
              foreign_keys: [{ column: "id", reference_table: "m2", reference_column: "r" }],
            },
          }),
        409,
        /cycle/,
      );
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("PUT /table/{name}: a reordered table answers its GET response with a no-op", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/s", {
        body: {
          table: {
            columns: [{ name: "u", type: "int" }, { name: "up", type: "int" }],
            constraints: {
              unique: [{ columns: ["u"] }],
              foreign_keys: [{ column: "up", reference_table: "s", reference_column: "u" }],
            },
          },
        },
      }),
    );
    ok(await put(server, "s", { columns: [...(await columnsOf(server, "s"))].reverse() }));
    for (const row of [{ u: 1 }, { u: 2, up: 1 }, { u: 3 }]) {
      ok(await server.request("POST", "table/s/records", { body: [row] }));
    }
    const before = await state(server);
    const got = ok(await server.request("GET", "table/s"));
    assert.deepEqual(ok(await put(server, "s", got.table)), got);
    assert.equal(await state(server), before);
    assert.deepEqual((await records(server, "s")).map((r) => r.u), [1, 2, 3]);
  } finally {
    await server.dispose();
  }
});

Deno.test("PUT /table/{name}: a move carries exactly the sequences the defaults still use", async (t) => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "schema/s2"));
    await t.step(
      "a default changed away from the sequence stays changed after a move",
      async () => {
        ok(
          await server.request("POST", "table/t", {
            body: {
              table: { columns: [{ name: "id", type: "serial" }, { name: "v", type: "int" }] },
            },
          }),
        );
        const columns = await columnsOf(server, "t");
        columns[0].default = "100";
        ok(await put(server, "t", { columns }));
        const { table } = ok(await put(server, "t", { schema: "s2" }));
        assert.equal(table.columns[0].default, "100");
        ok(await server.request("DELETE", "table/t?schema=s2"));
      },
    );

    await t.step("moving and changing the default at once leaves no sequence behind", async () => {
      ok(
        await server.request("POST", "table/t?schema=s2", {
          body: { table: { columns: [{ name: "id", type: "serial" }] } },
        }),
      );
      const columns = await columnsOf(server, "t", "s2");
      columns[0].default = "100";
      const { table } = ok(
        await server.request("PUT", "table/t?schema=s2", {
          body: { table: { schema: "public", columns } },
        }),
      );
      assert.equal(table.columns[0].default, "100");
      ok(await server.request("DELETE", "schema/s2"));
      ok(await server.request("DELETE", "table/t"));
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("PUT /table/{name}: a GET response edited and sent back means what the client sees", async (t) => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/owners", {
        body: {
          table: {
            columns: [{ name: "id", type: "int" }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    ok(
      await server.request("POST", "table/pets", {
        body: {
          table: {
            columns: [
              { name: "id", type: "int" },
              { name: "tag", type: "varchar" },
              { name: "owner", type: "int" },
            ],
            constraints: {
              primary_key: { columns: ["id"] },
              unique: [{ columns: ["tag"] }],
              foreign_keys: [{
                column: "owner",
                reference_table: "owners",
                reference_column: "id",
              }],
            },
          },
        },
      }),
    );
    ok(await server.request("POST", "table/owners/records", { body: [{ id: 7 }] }));
    ok(
      await server.request("POST", "table/pets/records", {
        body: [{ id: 1, tag: "rex", owner: 7 }, { id: 2, tag: "tom", owner: null }],
      }),
    );

    await t.step("renamed columns carry the constraints that name them", async () => {
      const { table } = ok(await server.request("GET", "table/pets"));
      const names: Record<string, string> = { id: "pet_id", tag: "label", owner: "owner_id" };
      for (const column of table.columns) column.name = names[column.name];
      const updated = ok(await put(server, "pets", table)).table;
      assert.deepEqual(updated.constraints, {
        primary_key: { name: "pets_pkey", columns: ["pet_id"] },
        unique: [{ name: "pets_tag_key", columns: ["label"] }],
        foreign_keys: [{
          name: "pets_owner_fkey",
          column: "owner_id",
          reference_table: "owners",
          reference_column: "id",
          reference_schema: "public",
        }],
      });
      assert.deepEqual(await records(server, "pets"), [
        { pet_id: 1, label: "rex", owner_id: 7 },
        { pet_id: 2, label: "tom", owner_id: null },
      ]);
      // The keys hold on their new columns.
      errorOf(
        await server.request("POST", "table/pets/records", { body: [{ pet_id: 3, label: "rex" }] }),
        409,
      );
      errorOf(
        await server.request("POST", "table/pets/records", { body: [{ pet_id: 3, owner_id: 8 }] }),
        422,
      );
    });

    await t.step(
      "a new column with the name of a column the update drops is 422 and empties nothing",
      async () => {
        const { table } = ok(await server.request("GET", "table/pets"));
        const columns = table.columns.map((c: Json) =>
          c.name === "label" ? { name: "label", type: "varchar" } : c
        );
        const error = await refused(
          server,
          () => put(server, "pets", { columns }),
          422,
          /"label".*send its id to keep it/,
        );
        assert.deepEqual(error.details!.map((d: Json) => d.field), ["columns[1].id"]);
        assert.deepEqual((await records(server, "pets")).map((r) => r.label), ["rex", "tom"]);
      },
    );

    await t.step("a retyped column keeps its default as read, whatever its rendering", async () => {
      ok(
        await server.request("POST", "table/tags", {
          body: { table: { columns: [{ name: "t", type: "varchar", default: "'v'" }] } },
        }),
      );
      const { table } = ok(await server.request("GET", "table/tags"));
      table.columns[0].type = "text";
      ok(await put(server, "tags", table));
      ok(await server.request("POST", "table/tags/records", { body: [{}] }));
      assert.deepEqual(await records(server, "tags"), [{ t: "v" }]);
      ok(await server.request("DELETE", "table/tags"));
    });

    await t.step("dropping a column and adding one of its name takes two requests", async () => {
      const columns = await columnsOf(server, "pets");
      const kept = columns.filter((c: Json) => c.name !== "label");
      ok(await put(server, "pets", { columns: kept }));
      const { table } = ok(
        await put(server, "pets", { columns: [...kept, { name: "label", type: "int" }] }),
      );
      const integer = ENGINE === "postgres" ? "integer" : "INTEGER";
      assert.deepEqual(table.columns.map((c: Json) => [c.id, c.name, c.type]), [
        [1, "pet_id", integer],
        [3, "owner_id", integer],
        [4, "label", integer],
      ]);
      assert.deepEqual((await records(server, "pets")).map((r) => r.label), [null, null]);
    });
  } finally {
    await server.dispose();
  }
});
