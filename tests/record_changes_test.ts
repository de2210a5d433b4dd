import assert from "node:assert/strict";
import { ENGINE } from "./helpers/engine.ts";
import { errorOf, fingerprint, mint, ok, TestServer } from "./helpers/server.ts";
import { CUSTOMERS_TABLE, ORDERS_TABLE } from "./fixtures/tables.ts";

const customers = CUSTOMERS_TABLE;

const orders = ORDERS_TABLE;

const ORDERS = [
  { id: 1, customer_id: 1, status: "new", qty: 1, price: 9.5, code: "A-1", paid: true },
  { id: 2, customer_id: 1, status: "new", qty: 5, price: 20, code: "A-2", paid: false },
  { id: 3, customer_id: 2, status: "shipped", qty: 10, price: 1.25, code: "B-1", paid: null },
  { id: 4, customer_id: null, status: "Cancelled", qty: null, price: null, code: null },
];

/** Every record of `table`, in primary-key order. */
// deno-lint-ignore no-explicit-any
async function records(server: TestServer, table: string): Promise<any[]> {
  return ok(await server.request("GET", `table/${table}/records?limit=10000`)).records;
}

/** The ids of `table`'s records for which `test` holds. */
async function idsWhere(
  server: TestServer,
  table: string,
  test: (r: Record<string, unknown>) => boolean = () => true,
): Promise<number[]> {
  return (await records(server, table)).filter(test).map((r) => Number(r.id));
}

/** Fresh `customers` and `orders` with their rows. */
async function reset(server: TestServer): Promise<void> {
  await server.request("DELETE", "table/orders");
  await server.request("DELETE", "table/customers");
  ok(await server.request("POST", "table/customers", { body: { table: customers } }));
  ok(await server.request("POST", "table/orders", { body: { table: orders } }));
  ok(
    await server.request("POST", "table/customers/records", {
      body: [{ id: 1, name: "Ada" }, { id: 2, name: "Grace" }, { id: 3, name: "Linus" }],
    }),
  );
  ok(await server.request("POST", "table/orders/records", { body: ORDERS }));
}

/** Asserts that `answer` is the error `status` and that nothing visible changed. */
async function refusedUnchanged(
  server: TestServer,
  send: () => ReturnType<TestServer["request"]>,
  status: number,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const before = await fingerprint(server);
  const error = errorOf(await send(), status);
  assert.equal(await fingerprint(server), before, "nothing changed");
  return error;
}

/** Each filter kind, and the ids of {@link ORDERS} it keeps. */
const FILTER_CASES: [string, number[]][] = [
  ["id=eq.2", [2]],
  ["status=neq.new", [3, 4]],
  ["qty=gt.1", [2, 3]],
  ["qty=gte.5", [2, 3]],
  ["price=lt.10", [1, 3]],
  ["price=lte.9.5", [1, 3]],
  ["code=like.A-*", [1, 2]],
  ["status=ilike.cancel*", [4]],
  ["id=in.(1,3,99)", [1, 3]],
  ["customer_id=is.null", [4]],
  ["paid=is.true", [1]],
  ["paid=is.false", [2]],
  ["paid=not.is.null", [1, 2]],
  ["id=not.in.(1,2)", [3, 4]],
  ["status=eq.new&qty=gt.1", [2]],
  ["code=eq.none", []],
];

Deno.test("record changes: PATCH and DELETE by filter", async (t) => {
  const server = await TestServer.start();
  try {
    await reset(server);

    await t.step(
      "PATCH sets the columns of the rows the filter keeps and counts them",
      async () => {
        const answer = ok(
          await server.request("PATCH", "table/orders/records?id=eq.2", {
            body: { status: "shipped", qty: 6, note: "gift" },
          }),
        );
        assert.deepEqual(answer, { updated: 1 });
        const rows = await records(server, "orders");
        assert.deepEqual(rows[1], { ...ORDERS[1], status: "shipped", qty: 6, note: "gift" });
        assert.deepEqual(rows[0], { ...ORDERS[0], note: null }, "other rows stay");
      },
    );

    for (const [filter, ids] of FILTER_CASES) {
      await t.step(`PATCH ?${filter} changes rows ${JSON.stringify(ids)}`, async () => {
        await reset(server);
        const answer = ok(
          await server.request("PATCH", `table/orders/records?${filter}`, {
            body: { note: "hit" },
          }),
        );
        assert.equal(answer.updated, ids.length);
        assert.deepEqual(await idsWhere(server, "orders", (r) => r.note === "hit"), ids);
      });
      await t.step(`DELETE ?${filter} deletes rows ${JSON.stringify(ids)}`, async () => {
        await reset(server);
        const answer = ok(await server.request("DELETE", `table/orders/records?${filter}`));
        assert.deepEqual(answer, { deleted: ids.length });
        assert.deepEqual(
          await idsWhere(server, "orders"),
          [1, 2, 3, 4].filter((id) => !ids.includes(id)),
        );
      });
    }

    await t.step("all=true changes every row, with or without filters", async () => {
      await reset(server);
      assert.deepEqual(
        ok(await server.request("PATCH", "table/orders/records?all=true", { body: { qty: 0 } })),
        { updated: 4 },
      );
      assert.deepEqual((await records(server, "orders")).map((r) => r.qty), [0, 0, 0, 0]);
      assert.deepEqual(
        ok(await server.request("DELETE", "table/orders/records?all=true&id=gt.2")),
        { deleted: 2 },
        "filters given with all=true still apply",
      );
      assert.deepEqual(ok(await server.request("DELETE", "table/orders/records?all=1")), {
        deleted: 2,
      });
      assert.deepEqual(await records(server, "orders"), []);
    });

    await t.step("values are cast as inserted values are, exact and by column name", async () => {
      await reset(server);
      ok(
        await server.request("PATCH", "table/orders/records?id=eq.1", {
          body: '{"ID": 9007199254740993, "Price": 12345678.99, "paid": "f", "qty": "7"}',
          headers: { "content-type": "application/json" },
        }),
      );
      const row = (await records(server, "orders")).find((r) => r.code === "A-1");
      assert.equal(row.id, "9007199254740993", "a BIGINT beyond 2^53 keeps every digit");
      assert.equal(row.price, 12345678.99);
      assert.equal(row.paid, false);
      assert.equal(row.qty, 7);
    });

    await t.step("null sets NULL", async () => {
      await reset(server);
      ok(await server.request("PATCH", "table/orders/records?id=eq.1", { body: { qty: null } }));
      assert.equal((await records(server, "orders"))[0].qty, null);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("record changes: what is refused changes nothing", async (t) => {
  const server = await TestServer.start();
  try {
    await reset(server);
    const patch = (query: string, body: unknown, headers?: Record<string, string>) => () =>
      server.request("PATCH", `table/orders/records${query}`, { body, headers });
    const del = (query: string, table = "orders") => () =>
      server.request("DELETE", `table/${table}/records${query}`);

    await t.step("a change without a filter is 400 unless all=true", async () => {
      for (const query of ["", "?schema=public", "?all=false", "?all=0"]) {
        const error = await refusedUnchanged(server, patch(query, { qty: 1 }), 400);
        assert.match(error.message, /needs a filter.*all=true/);
        await refusedUnchanged(server, del(query), 400);
      }
      await refusedUnchanged(server, del("?all=maybe"), 400);
      await refusedUnchanged(server, del("?all=true&all=true"), 400);
    });

    await t.step("the read's select, order, after, count, offset and limit are 400", async () => {
      for (
        const extra of ["select=id", "order=id", "after=x", "count=exact", "offset=1", "limit=1"]
      ) {
        const name = extra.split("=")[0]!;
        const error = await refusedUnchanged(server, patch(`?id=eq.1&${extra}`, { qty: 1 }), 400);
        assert.match(error.message, new RegExp(`${name} does not apply`));
        await refusedUnchanged(server, del(`?id=eq.1&${extra}`), 400);
      }
    });

    await t.step("a filter on an unknown column, or with a bad value, is 400", async () => {
      for (const query of ["?nope=eq.1", "?qty=eq.many", "?qty=between.1", "?paid=is.maybe"]) {
        await refusedUnchanged(server, patch(query, { qty: 1 }), 400);
        await refusedUnchanged(server, del(query), 400);
      }
    });

    await t.step("an unknown column in the body is 422 naming it", async () => {
      const error = await refusedUnchanged(
        server,
        patch("?id=eq.1", { qty: 2, colour: "red" }),
        422,
      );
      assert.deepEqual(error.details, [{ column: "colour", message: 'Unknown column "colour"' }]);
    });

    await t.step("a value its column cannot take is 422 naming the column", async () => {
      const error = await refusedUnchanged(
        server,
        patch("?id=eq.1", { qty: "many", paid: 2, note: "fine" }),
        422,
      );
      assert.deepEqual(error.details?.map((d: { column: string }) => d.column), [
        "qty",
        "paid",
      ]);
      // Row errors name the column's type as the engine does (PostgreSQL's canonical name).
      const type = ENGINE === "postgres" ? "integer" : "INTEGER";
      assert.match(error.message, new RegExp(`"orders".*Value "many" is not a valid ${type}`));
    });

    await t.step("null for a NOT NULL column is 422", async () => {
      const error = await refusedUnchanged(server, patch("?id=eq.1", { status: null }), 422);
      assert.match(error.message, /"status" is NOT NULL/);
    });

    await t.step("a body that is not a non-empty JSON object is 400, other types 415", async () => {
      for (const body of ["{}", "[]", "[{}]", "5", '{"qty": 1, "qty": 2}', '{"qty": ']) {
        await refusedUnchanged(
          server,
          patch("?id=eq.1", body, { "content-type": "application/json" }),
          400,
        );
      }
      await refusedUnchanged(
        server,
        patch("?id=eq.1", '{"qty": 1}', { "content-type": "text/plain" }),
        415,
      );
    });

    await t.step("a duplicate primary or unique key is 409", async () => {
      let error = await refusedUnchanged(server, patch("?id=eq.2", { id: 1 }), 409);
      assert.match(error.message, /primary or unique key another row has/);
      error = await refusedUnchanged(server, patch("?id=eq.2", { code: "A-1" }), 409);
      assert.match(error.message, /"orders"/);
    });

    await t.step("a change that fails on one row of many changes none of them", async () => {
      // Rows 1 and 2 both get code Z: the second clashes with the first.
      await refusedUnchanged(server, patch("?customer_id=eq.1", { code: "Z", qty: 99 }), 409);
      await refusedUnchanged(server, patch("?all=true", { id: 5, note: "x" }), 409);
      // Customers 2 and 3 could go, customer 1 is referenced: none goes.
      await refusedUnchanged(server, del("?id=in.(2,1,3)", "customers"), 409);
    });

    await t.step(
      "a value no referenced row has breaks the foreign key: 422, as for an insert",
      async () => {
        const error = await refusedUnchanged(server, patch("?id=eq.1", { customer_id: 99 }), 422);
        assert.match(error.message, /reference a row that does not exist/);
      },
    );

    await t.step("deleting a referenced row is 409", async () => {
      const error = await refusedUnchanged(server, del("?id=eq.1", "customers"), 409);
      assert.match(error.message, /referenced by another table's foreign key/);
    });

    await t.step(
      "a referenced row's key cannot change, even to its own value: 409 (DuckDB's check)",
      async () => {
        if (ENGINE === "postgres") {
          // PostgreSQL checks the foreign key's values, not the write: the same key is 200.
          const before = await fingerprint(server);
          const same = server.request("PATCH", "table/customers/records?id=eq.1", {
            body: { id: 1 },
          });
          assert.deepEqual(ok(await same), { updated: 1 });
          assert.equal(await fingerprint(server), before, "nothing changed");
        }
        for (const body of ENGINE === "postgres" ? [{ id: 10 }] : [{ id: 10 }, { id: 1 }]) {
          const error = await refusedUnchanged(
            server,
            () => server.request("PATCH", "table/customers/records?id=eq.1", { body }),
            409,
          );
          assert.match(error.message, /foreign key references/);
        }
      },
    );

    await t.step("the missing table is 404", async () => {
      await refusedUnchanged(
        server,
        () => server.request("PATCH", "table/nothing/records?id=eq.1", { body: { a: 1 } }),
        404,
      );
      await refusedUnchanged(server, del("?id=eq.1", "nothing"), 404);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("record changes: foreign keys allow what they should", async () => {
  const server = await TestServer.start();
  try {
    await reset(server);
    // A referenced row's other columns, a referencing row's columns, its key to an existing row.
    ok(await server.request("PATCH", "table/customers/records?id=eq.1", { body: { name: "A" } }));
    ok(await server.request("PATCH", "table/orders/records?id=eq.1", { body: { note: "n" } }));
    ok(await server.request("PATCH", "table/orders/records?id=eq.1", { body: { customer_id: 3 } }));
    ok(
      await server.request("PATCH", "table/orders/records?id=eq.3", {
        body: { customer_id: null },
      }),
    );
    // Customer 2 is no longer referenced: its key may change, and it may go.
    ok(await server.request("PATCH", "table/customers/records?id=eq.2", { body: { id: 20 } }));
    assert.deepEqual(ok(await server.request("DELETE", "table/customers/records?id=eq.20")), {
      deleted: 1,
    });
    // A row's primary key set to its own value, and an unreferenced table's key, are fine.
    ok(await server.request("PATCH", "table/orders/records?id=eq.2", { body: { id: 2, qty: 8 } }));
    ok(await server.request("PATCH", "table/orders/records?id=eq.2", { body: { id: 12 } }));
    assert.deepEqual(await idsWhere(server, "orders"), [1, 3, 4, 12]);
    assert.deepEqual(await idsWhere(server, "customers"), [1, 3]);
  } finally {
    await server.dispose();
  }
});

Deno.test("record changes: Idempotency-Key, scopes, schemas and methods", async (t) => {
  const server = await TestServer.start();
  try {
    await reset(server);

    await t.step("a keyed PATCH retried gets its answer again and changes nothing", async () => {
      const first = await server.request("PATCH", "table/orders/records?id=eq.1", {
        body: { qty: 5 },
        headers: { "idempotency-key": "patch-1" },
      });
      assert.deepEqual(ok(first), { updated: 1 });
      ok(await server.request("PATCH", "table/orders/records?id=eq.1", { body: { qty: 7 } }));
      const again = await server.request("PATCH", "table/orders/records?id=eq.1", {
        body: { qty: 5 },
        headers: { "idempotency-key": "patch-1" },
      });
      assert.deepEqual(ok(again), { updated: 1 });
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal((await records(server, "orders"))[0].qty, 7, "not carried out again");
      const other = await server.request("PATCH", "table/orders/records?id=eq.2", {
        body: { qty: 5 },
        headers: { "idempotency-key": "patch-1" },
      });
      assert.equal(errorOf(other, 409).type, "idempotency_key_reused");
    });

    await t.step("a keyed DELETE retried gets its answer again and deletes nothing", async () => {
      const send = () =>
        server.request("DELETE", "table/orders/records?status=eq.new", {
          headers: { "idempotency-key": "delete-1" },
        });
      assert.deepEqual(ok(await send()), { deleted: 2 });
      ok(
        await server.request("POST", "table/orders/records", {
          body: [{ id: 7, status: "new" }],
        }),
      );
      const again = await send();
      assert.deepEqual(ok(again), { deleted: 2 });
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(await idsWhere(server, "orders"), [3, 4, 7]);
    });

    await t.step("a token without tables:write, or confined elsewhere, is 403", async () => {
      const reader = await mint({ scope: "tables:read" });
      const confined = await mint({ scope: "tables:read tables:write", schemas: ["sales"] });
      for (const token of [reader, confined]) {
        await refusedUnchanged(
          server,
          () =>
            server.request("PATCH", "table/orders/records?id=eq.3", {
              body: { qty: 1 },
              token,
            }),
          403,
        );
        await refusedUnchanged(
          server,
          () => server.request("DELETE", "table/orders/records?id=eq.3", { token }),
          403,
        );
      }
    });

    await t.step("another method on the records path is 405 with Allow", async () => {
      const answer = await server.request("PUT", "table/orders/records");
      errorOf(answer, 405);
      assert.equal(answer.headers.get("allow"), "DELETE, GET, HEAD, PATCH, POST");
    });

    await t.step("changes of one row at once all answer, each 200 or 409", async () => {
      const answers = await Promise.all(
        Array.from(
          { length: 6 },
          (_, i) => server.request("PATCH", "table/orders/records?id=eq.3", { body: { qty: i } }),
        ),
      );
      for (const answer of answers) {
        if (answer.status !== 200) errorOf(answer, 409);
      }
      assert.ok(answers.some((a) => a.status === 200));
    });
  } finally {
    await server.dispose();
  }
});
