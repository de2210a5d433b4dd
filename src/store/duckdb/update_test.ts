import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { Table } from "../../catalog/model.ts";
import { planUpdate, type TableUpdateRequest } from "../../catalog/update.ts";
import type { DuckDBStore } from "./duckdb_store.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";

const ref = { schema: "public", name: "items" };

async function update(
  store: DuckDBStore,
  request: TableUpdateRequest | ((t: Table) => TableUpdateRequest),
) {
  return await store.tables.update(
    ref,
    (current) => planUpdate(current, typeof request === "function" ? request(current) : request),
  );
}

/** DuckDB's own id of the table: a rebuild makes a new one, an ALTER or nothing keeps it. */
async function tableOid(store: DuckDBStore): Promise<bigint> {
  const [row] = await store.database.withSession((session) =>
    session.rows(
      `SELECT table_oid FROM duckdb_tables() WHERE schema_name = 'public' AND table_name = 'items'`,
    )
  );
  return row!.table_oid as bigint;
}

Deno.test("DuckDBStore.updateTable() rewrites nothing for a GET response sent back", async () => {
  await withTempStore(async (store) => {
    await store.tables.create(
      planTable(ref, {
        columns: [{ name: "id", type: "serial" }, { name: "label", type: "varchar" }],
        constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["label"] }] },
      }),
      { ifNotExists: false },
    );
    const oid = await tableOid(store);
    const result = await update(store, (current) => current);
    assert.equal(result.how, "unchanged");
    assert.equal(await tableOid(store), oid);
    assert.equal((await update(store, {})).how, "unchanged");
  });
});

Deno.test("DuckDBStore.updateTable() alters in place where DuckDB can and rebuilds where not", async () => {
  await withTempStore(async (store) => {
    await store.tables.create(
      planTable(ref, {
        columns: [{ name: "a", type: "int" }, { name: "b", type: "varchar" }],
      }),
      { ifNotExists: false },
    );
    const renamed = await update(store, (t) => ({
      columns: [{ ...t.columns[0]!, name: "alpha" }, t.columns[1]!, { name: "c", type: "int" }],
    }));
    assert.equal(renamed.how, "altered");
    const reordered = await update(store, (t) => ({ columns: [...t.columns].reverse() }));
    assert.equal(reordered.how, "rebuilt");
    assert.deepEqual(reordered.table.columns.map((c) => c.id), [3, 2, 1]);
    const keyed = await update(store, { constraints: { unique: [{ columns: ["alpha"] }] } });
    assert.equal(keyed.how, "rebuilt");
  });
});

Deno.test("DuckDBStore.updateTable() alters a table that references itself in place, keeping the rows", async () => {
  await withTempStore(async (store) => {
    await store.tables.create(
      planTable(ref, {
        columns: [{ name: "id", type: "int" }, { name: "up", type: "int" }, {
          name: "note",
          type: "varchar",
        }],
        constraints: {
          primary_key: { columns: ["id"] },
          foreign_keys: [{ column: "up", reference_table: "items", reference_column: "id" }],
        },
      }),
      { ifNotExists: false },
    );
    await store.database.withSession(async (session) => {
      await session.run(`INSERT INTO public.items VALUES (1, NULL, 'root')`);
      await session.run(`INSERT INTO public.items VALUES (2, 1, 'leaf')`);
    });
    const renamed = await update(store, (t) => ({
      columns: [t.columns[0]!, t.columns[1]!, { ...t.columns[2]!, name: "label" }],
    }));
    assert.equal(renamed.how, "altered");
    const rows = await store.database.withSession((session) =>
      session.rows(`SELECT id, up, label FROM public.items ORDER BY id`)
    );
    assert.deepEqual(rows, [{ id: 1, up: null, label: "root" }, { id: 2, up: 1, label: "leaf" }]);
  });
});

Deno.test("DuckDBStore.updateTable() checkpoints after a rebuild: the new key's index is not left in memory", async () => {
  await withTempStore(async (store) => {
    await store.tables.create(
      planTable(ref, {
        columns: [{ name: "id", type: "bigint" }, { name: "label", type: "varchar" }],
        constraints: { primary_key: { columns: ["id"] } },
      }),
      { ifNotExists: false },
    );
    await store.database.withSession(async (session) => {
      await session.run(
        `INSERT INTO public.items SELECT range, 'row ' || range FROM range(300000)`,
      );
      await session.run("CHECKPOINT");
    });
    const rebuilt = await update(store, (t) => ({ columns: [...t.columns].reverse() }));
    assert.equal(rebuilt.how, "rebuilt");
    const index = (await store.health.memoryByUse()).get("art_index") ?? 0;
    assert.ok(index < 256 * 1024, `${index} bytes of key index held in memory after the rebuild`);
    const [row] = await store.database.withSession((session) =>
      session.rows("SELECT count(*) AS n, max(id) AS top FROM public.items")
    );
    assert.deepEqual([Number(row!.n), Number(row!.top)], [300000, 299999]);
  });
});
