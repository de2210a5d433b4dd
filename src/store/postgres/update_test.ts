import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { Table, TableDefinition } from "../../catalog/model.ts";
import { planUpdate, type TableUpdateRequest } from "../../catalog/update.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite, UpdateHow } from "../store.ts";
import { postgresTest } from "../../../tests/helpers/postgres.ts";
import { withPostgresStore } from "../../../tests/helpers/postgres_store.ts";
import { META } from "./metadata.ts";
import { openPostgresStore } from "./postgres_store.ts";

const PEOPLE: TableDefinition = {
  columns: [
    { name: "id", type: "integer", is_nullable: false },
    { name: "a", type: "varchar" },
    { name: "b", type: "varchar" },
    { name: "boss", type: "integer" },
  ],
  constraints: { primary_key: { columns: ["id"] } },
};

const ref = { schema: "public", name: "people" };
const wanted = (request: TableUpdateRequest) => (current: Table) => planUpdate(current, request);

function keyedWrite(key: string): KeyedWrite<{ table: Table; how: UpdateHow }> {
  return {
    scope: "tester PUT /table/people",
    key,
    fingerprint: () => "f".repeat(64),
    answer: (result) => ({ status: 200, body: result }),
    at: Date.now(),
    since: 0,
  };
}

await postgresTest(`updateTable() on PostgreSQL`, async (t, server) => {
  await withPostgresStore(server, async (store, database, url) => {
    const rows = (sql: string) => database.withSession((s) => s.rows(sql));
    await store.tables.create(planTable(ref, PEOPLE), { ifNotExists: false });
    await database.withSession((s) =>
      s.run(`INSERT INTO people VALUES (1, 'x1', 'y1', NULL), (2, 'x2', 'y2', 1)`)
    );

    await t.step("swapping two columns' names keeps each id with its values", async () => {
      const current = await store.tables.get(ref);
      const columns = current.columns.map((c) =>
        c.name === "a" ? { ...c, name: "b" } : c.name === "b" ? { ...c, name: "a" } : c
      );
      const { table, how } = await store.tables.update(ref, wanted({ columns }));
      assert.equal(how, "altered");
      assert.deepEqual(table.columns.map((c) => [c.id, c.name]), [
        [1, "id"],
        [2, "b"],
        [3, "a"],
        [4, "boss"],
      ]);
      assert.deepEqual(await rows(`SELECT a, b FROM people ORDER BY id`), [
        { a: "y1", b: "x1" },
        { a: "y2", b: "x2" },
      ]);
    });

    await t.step(
      "a foreign key to the table itself is added, and kept across a rename",
      async () => {
        const fk = { column: "boss", reference_table: "people", reference_column: "id" };
        const added = await store.tables.update(
          ref,
          wanted({ constraints: { foreign_keys: [fk], primary_key: { columns: ["id"] } } }),
        );
        assert.equal(added.table.constraints.foreign_keys[0]!.reference_table, "people");
        const { table } = await store.tables.update(ref, wanted({ name: "staff" }));
        assert.deepEqual(table.constraints.foreign_keys[0], {
          name: "people_boss_fkey",
          column: "boss",
          reference_table: "staff",
          reference_column: "id",
          reference_schema: "public",
        });
        await store.tables.update({ schema: "public", name: "staff" }, wanted({ name: "people" }));
      },
    );

    await t.step("a new serial column numbers the existing rows and is recorded", async () => {
      const current = await store.tables.get(ref);
      const { table } = await store.tables.update(
        ref,
        wanted({ columns: [...current.columns, { name: "n", type: "serial" }] }),
      );
      assert.equal(table.columns[4]!.id, 5);
      assert.equal(table.columns[4]!.default, "nextval('public.people_n_seq')");
      assert.deepEqual((await rows(`SELECT n FROM people ORDER BY n`)).map((r) => r.n), [1, 2]);
    });

    await t.step("a keyed update keeps its answer; an unchanged one too", async () => {
      const current = await store.tables.get(ref);
      const columns = current.columns.map((c) => c.name === "a" ? { ...c, type: "text" } : c);
      const altered = await store.tables.update(ref, wanted({ columns }), keyedWrite("k1"));
      assert.equal(altered.how, "altered");
      const same = await store.tables.update(ref, wanted({ columns }), keyedWrite("k2"));
      assert.equal(same.how, "unchanged");
      const kept = await rows(`SELECT key FROM ${META}.idempotency_keys ORDER BY key`);
      assert.deepEqual(kept.map((r) => r.key), ["k1", "k2"]);
    });

    await t.step("a failing cast rolls back the renames made before it", async () => {
      const before = await store.tables.get(ref);
      const columns = before.columns.map((c) =>
        c.name === "a" ? { ...c, type: "integer" } : c.name === "b" ? { ...c, name: "bee" } : c
      );
      await assert.rejects(store.tables.update(ref, wanted({ columns })), (error) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 422);
        assert.match(
          error.message,
          /Value "y1" of column "a" in row 0 cannot be cast to integer/,
        );
        return true;
      });
      assert.deepEqual(await store.tables.get(ref), before);
    });

    await t.step("two stores updating one table at once take turns", async () => {
      const other = await openPostgresStore({ url });
      try {
        const current = await store.tables.get(ref);
        const renamed = (to: string) =>
          wanted({
            columns: current.columns.map((c) => c.name === "b" ? { ...c, name: to } : c),
          });
        const results = await Promise.allSettled([
          store.tables.update(ref, renamed("one")),
          other.tables.update(ref, renamed("two")),
        ]);
        assert.ok(results.every((r) => r.status === "fulfilled"), JSON.stringify(results));
        const names = (await store.tables.get(ref)).columns.map((c) => c.name);
        assert.ok(names.includes("one") !== names.includes("two"), names.join());
      } finally {
        await other.close();
      }
    });
  });
});
