import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import { ApiError } from "../../errors.ts";
import { postgresTest } from "../../../tests/helpers/postgres.ts";
import { withPostgresStore } from "../../../tests/helpers/postgres_store.ts";

await postgresTest(
  `summarizeRecords() on PostgreSQL gives per-column figures of the filtered rows`,
  async (_t, server) => {
    await withPostgresStore(server, async (store, database) => {
      const ref = { schema: "public", name: "sales" };
      await store.tables.create(
        planTable(ref, {
          columns: [
            { name: "id", type: "bigint", is_nullable: false },
            { name: "price", type: "decimal(10,2)" },
            { name: "kind", type: "varchar" },
            { name: "at", type: "timestamp" },
            { name: "ok", type: "boolean" },
            { name: "doc", type: "jsonb" },
            { name: "tags", type: "integer[]" },
            { name: "uid", type: "uuid" },
          ],
        }),
        { ifNotExists: false },
      );
      await database.withSession((s) =>
        s.run(
          `INSERT INTO sales (id, price, kind, at, ok, doc, tags, uid) VALUES
           (1, 1.50, 'b', '2024-01-02', true, '{}', '{3}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
           (2, 2.50, 'a', '2024-01-01', false, '[]', '{1,2}', NULL),
           (3, NULL, 'a', NULL, NULL, NULL, NULL, NULL),
           (9007199254740993, 10.00, 'c', '2024-01-03', true, NULL, '{1}', NULL)`,
        )
      );
      const summary = await store.records.summarize(ref, []);
      assert.equal(summary.table, "sales");
      assert.equal(summary.rows, 4);
      const [id, price, kind, at, ok, doc, tags, uid] = summary.columns;
      assert.deepEqual(id, {
        name: "id",
        type: "bigint",
        count: 4,
        nulls: 0,
        approx_distinct: 4,
        min: 1,
        max: "9007199254740993",
        // Exactly 2251799813685249.75, nearest as a double.
        avg: 2251799813685249.75,
        std: id!.std,
        q25: 1.75,
        q50: 2.5,
        q75: id!.q75,
      });
      assert.deepEqual(
        [price!.type, price!.count, price!.nulls, price!.min, price!.max],
        ["numeric(10,2)", 3, 1, 1.5, 10],
      );
      assert.equal(price!.avg, 14 / 3);
      const mean = 14 / 3;
      const variance = ((1.5 - mean) ** 2 + (2.5 - mean) ** 2 + (10 - mean) ** 2) / 2;
      assert.ok(Math.abs(price!.std! - Math.sqrt(variance)) < 1e-9);
      assert.deepEqual([price!.q25, price!.q50, price!.q75], [2, 2.5, 6.25]);
      assert.deepEqual([kind!.approx_distinct, kind!.min, kind!.max, kind!.avg], [
        3,
        "a",
        "c",
        null,
      ]);
      assert.deepEqual([at!.min, at!.max], [
        "2024-01-01T00:00:00.000000",
        "2024-01-03T00:00:00.000000",
      ]);
      assert.deepEqual([ok!.min, ok!.max, ok!.count], [false, true, 3]);
      assert.deepEqual([doc!.min, doc!.max, doc!.approx_distinct], [null, null, 2]);
      assert.deepEqual([tags!.min, tags!.max], [[1], [3]]);
      assert.deepEqual([uid!.min, uid!.count], ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", 1]);

      const filtered = await store.records.summarize(
        ref,
        [{ column: "kind", op: "eq", negated: false, value: "a" }],
        ["price", "kind"],
      );
      assert.equal(filtered.rows, 2);
      assert.deepEqual(filtered.columns.map((c) => [c.name, c.count, c.min]), [
        ["price", 1, 2.5],
        ["kind", 2, "a"],
      ]);
      const none = await store.records.summarize(
        ref,
        [{ column: "id", op: "lt", negated: false, value: "0" }],
        ["price"],
      );
      assert.deepEqual(none.columns[0], {
        name: "price",
        type: "numeric(10,2)",
        count: 0,
        nulls: 0,
        approx_distinct: 0,
        min: null,
        max: null,
        avg: null,
        std: null,
        q25: null,
        q50: null,
        q75: null,
      });
      await assert.rejects(
        store.records.summarize(ref, [{ column: "price", op: "gt", negated: false, value: "x" }]),
        (error) =>
          error instanceof ApiError && error.status === 400 && /"price"/.test(error.message),
      );
    });
  },
);
