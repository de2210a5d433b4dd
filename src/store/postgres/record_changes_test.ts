import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { Filter } from "../../catalog/filters.ts";
import type { TableDefinition } from "../../catalog/model.ts";
import { rejectsWith } from "../../../tests/helpers/api_error.ts";
import { postgresTest } from "../../../tests/helpers/postgres.ts";
import { withPostgresStore } from "../../../tests/helpers/postgres_store.ts";

const CUSTOMERS: TableDefinition = {
  columns: [{ name: "id", type: "integer" }, { name: "name", type: "varchar" }],
  constraints: { primary_key: { columns: ["id"] } },
};

const ORDERS: TableDefinition = {
  columns: [
    { name: "id", type: "bigint", is_nullable: false },
    { name: "customer_id", type: "integer" },
    { name: "status", type: "varchar", is_nullable: false },
    { name: "qty", type: "integer" },
    { name: "price", type: "decimal(10,2)" },
    { name: "code", type: "varchar(5)" },
    { name: "paid", type: "boolean" },
    { name: "tags", type: "integer[]" },
    { name: "doc", type: "jsonb" },
  ],
  constraints: {
    primary_key: { columns: ["id"] },
    unique: [{ columns: ["code"] }],
    foreign_keys: [{ column: "customer_id", reference_table: "customers", reference_column: "id" }],
  },
};

const eq = (column: string, value: string): Filter => ({
  column,
  op: "eq",
  negated: false,
  value,
});

await postgresTest(`updateRecords() and deleteRecords() on PostgreSQL`, async (t, server) => {
  await withPostgresStore(server, async (store, database) => {
    const customers = { schema: "public", name: "customers" };
    const orders = { schema: "public", name: "orders" };
    const rows = () =>
      database.withSession((s) =>
        s.rows(
          `SELECT id::text, customer_id, status, qty, price::text, code, paid, tags, doc
           FROM orders ORDER BY id`,
        )
      );
    await store.tables.create(planTable(customers, CUSTOMERS), { ifNotExists: false });
    await store.tables.create(planTable(orders, ORDERS), { ifNotExists: false });
    await database.withSession(async (s) => {
      await s.run("INSERT INTO customers (id, name) VALUES (1, 'Ada'), (2, 'Grace'), (3, 'L')");
      await s.run(
        `INSERT INTO orders (id, customer_id, status, qty, price, code, paid) VALUES
           (1, 1, 'new', 1, 9.5, 'A-1', true), (2, 1, 'new', 5, 20, 'A-2', false),
           (3, 2, 'shipped', 10, 1.25, 'B-1', NULL)`,
      );
    });

    await t.step("sets values cast as inserted values are, in the chosen rows", async () => {
      const result = await store.records.update(orders, [
        { key: "ID", json: "9007199254740993" },
        { key: "Price", json: "12345678.99" },
        { key: "paid", json: '"f"' },
        { key: "qty", json: '"7"' },
        { key: "tags", json: "[1, null, 3]" },
        { key: "doc", json: '{"a": [1]}' },
      ], () => [eq("id", "1")]);
      assert.equal(result.updated, 1);
      assert.equal(result.table.name, "orders");
      const [, , changed] = await rows();
      assert.deepEqual(changed, {
        id: "9007199254740993",
        customer_id: 1,
        status: "new",
        qty: 7,
        price: "12345678.99",
        code: "A-1",
        paid: false,
        tags: [1, null, 3],
        doc: { a: [1] },
      });
      const none = await store.records.update(orders, [{ key: "qty", json: "null" }], () => [
        eq("status", "nobody"),
      ]);
      assert.equal(none.updated, 0);
      const all = await store.records.update(orders, [{ key: "qty", json: "null" }], () => []);
      assert.equal(all.updated, 3);
    });

    await t.step("what is refused changes nothing", async () => {
      const before = await rows();
      await rejectsWith(
        store.records.update(orders, [{ key: "qty", json: "1" }], () => [eq("qty", "many")]),
        400,
        /"qty"/,
      );
      const unknown = await rejectsWith(
        store.records.update(orders, [{ key: "colour", json: '"red"' }], () => []),
        422,
        /colour/,
      );
      assert.deepEqual(unknown.details, [{
        column: "colour",
        message: 'Unknown column "colour"',
      }]);
      const bad = await rejectsWith(
        store.records.update(orders, [
          { key: "qty", json: '"many"' },
          { key: "paid", json: "2" },
          { key: "status", json: '"fine"' },
        ], () => [eq("id", "2")]),
        422,
        /"orders".*Value "many" is not a valid integer/,
      );
      assert.deepEqual(bad.details?.map((d) => d.column), ["qty", "paid"]);
      await rejectsWith(
        store.records.update(orders, [{ key: "status", json: "null" }], () => []),
        422,
        /"status" is NOT NULL/,
      );
      await rejectsWith(
        store.records.update(orders, [{ key: "code", json: '"too long"' }], () => []),
        422,
        /does not fit table "orders"/,
      );
      await rejectsWith(
        store.records.update(orders, [{ key: "id", json: "3" }], () => [eq("id", "2")]),
        409,
        /primary or unique key another row has/,
      );
      await rejectsWith(
        store.records.update(orders, [{ key: "code", json: '"Z"' }], () => [
          eq("customer_id", "1"),
        ]),
        409,
        /"orders"/,
      );
      await rejectsWith(
        store.records.update(orders, [{ key: "customer_id", json: "99" }], () => [eq("id", "2")]),
        422,
        /reference a row that does not exist/,
      );
      await rejectsWith(
        store.records.delete(customers, () => [
          { column: "id", op: "in", negated: false, value: ["2", "1", "3"] },
        ]),
        409,
        /referenced by another table's foreign key/,
      );
      await rejectsWith(
        store.records.update(customers, [{ key: "id", json: "10" }], () => [eq("id", "1")]),
        409,
        /foreign key references/,
      );
      await rejectsWith(
        store.records.update(
          { schema: "public", name: "nothing" },
          [{ key: "a", json: "1" }],
          () => [],
        ),
        404,
        /nothing/,
      );
      await rejectsWith(store.records.update(orders, [], () => []), 400, /no column/);
      assert.deepEqual(await rows(), before);
    });

    await t.step("deletes the chosen rows; a referenced key may keep its value", async () => {
      const same = await store.records.update(customers, [{ key: "id", json: "1" }], () => [
        eq("id", "1"),
      ]);
      assert.equal(same.updated, 1);
      const deleted = await store.records.delete(orders, () => [eq("customer_id", "1")]);
      assert.equal(deleted.deleted, 2);
      assert.equal((await store.records.delete(customers, () => [eq("id", "1")])).deleted, 1);
      assert.deepEqual((await rows()).map((r) => r.id), ["3"]);
      await rejectsWith(store.records.delete(orders, () => [eq("id", "x")]), 400, /"id"/);
    });

    await t.step("a keyed change keeps its answer in its own transaction", async () => {
      const keyed = {
        scope: "tester DELETE /x",
        key: "k1",
        fingerprint: () => "f".repeat(64),
        answer: (result: { deleted: number }) => ({ status: 200, body: result.deleted }),
        at: Date.now(),
        since: 0,
      };
      await store.records.delete(orders, () => [], keyed);
      const kept = await store.answers.find("tester DELETE /x", "k1", 0);
      assert.equal(kept?.answer.body, 1);
    });
  });
});
