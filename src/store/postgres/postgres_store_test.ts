import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { TableDefinition } from "../../catalog/model.ts";
import type { TemplateDefinition } from "../../catalog/templates.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite } from "../store.ts";
import { rejectsWith } from "../../../tests/helpers/api_error.ts";
import { freshDatabase, postgresTest, type TestPostgres } from "../../../tests/helpers/postgres.ts";
import { Database } from "./database.ts";
import { META, rewriteTable } from "./metadata.ts";
import { openPostgresStore, type PostgresStore } from "./postgres_store.ts";

/** Runs `work` on a store over a database of its own, closed however it ends. */
async function withStore<T>(
  server: TestPostgres,
  work: (store: PostgresStore, url: string) => Promise<T>,
): Promise<T> {
  const url = await freshDatabase(server);
  const store = await openPostgresStore({ url });
  try {
    return await work(store, url);
  } finally {
    await store.close();
  }
}

const plan = (schema: string, name: string, definition: TableDefinition) =>
  planTable({ schema, name }, definition);

/** A keyed write whose answer is its result as the body. */
function keyedWrite<R>(key: string): KeyedWrite<R> {
  return {
    scope: "tester POST /x",
    key,
    fingerprint: () => "f".repeat(64),
    answer: (result) => ({ status: 201, body: result }),
    at: Date.now(),
    since: 0,
  };
}

const PARENT: TableDefinition = {
  columns: [
    { name: "id", type: "serial" },
    { name: "Email", type: "varchar(200)", is_nullable: false },
    { name: "score", type: "numeric(10,2)", default: "0" },
    { name: "active", type: "bool", default: "true" },
    { name: "born", type: "timestamptz", default: "now()" },
  ],
  constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["Email"] }] },
};

const CHILD: TableDefinition = {
  columns: [{ name: "id", type: "bigint" }, { name: "parent", type: "int" }],
  constraints: {
    primary_key: { columns: ["id"] },
    foreign_keys: [{ column: "parent", reference_table: "Parent", reference_column: "id" }],
  },
};

await postgresTest(`PostgresStore on PostgreSQL 15`, async (t, server) => {
  await t.step(
    "openPostgresStore() bootstraps one database from several stores at once",
    async () => {
      const url = await freshDatabase(server);
      const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore({ url })));
      try {
        for (const store of stores) assert.deepEqual(await store.schemas.list(), ["public"]);
        const again = await openPostgresStore({ url });
        await again.close();
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    },
  );

  await t.step("schemas are created, listed in any case, resolved and dropped", async () => {
    await withStore(server, async (store) => {
      assert.equal(await store.schemas.create("Sales"), "Sales");
      await rejectsWith(store.schemas.create("sales"), 409, /Schema "Sales" already exists/);
      assert.deepEqual(await store.schemas.list(), ["public", "Sales"]);
      assert.deepEqual(await store.schemas.list(["SALES"]), ["Sales"]);
      assert.equal(await store.schemas.resolve("sAlEs"), "Sales");
      await rejectsWith(store.schemas.resolve(META), 404);
      await rejectsWith(store.schemas.resolve("nowhere"), 404, /Schema "nowhere" does not exist/);
      await rejectsWith(store.schemas.drop("public", true), 409);

      await store.tables.create(plan("Sales", "t", { columns: [{ name: "a", type: "int" }] }), {
        ifNotExists: false,
      });
      await rejectsWith(store.schemas.drop("sales", false), 409, /holds 1 table\(s\)/);
      assert.equal(await store.schemas.drop("sales", true), "Sales");
      assert.deepEqual(await store.schemas.list(), ["public"]);
      const listing = await store.tables.list({ offset: 0, limit: 10, verbose: false });
      assert.equal(listing.total, 0);
    });
  });

  await t.step(
    "createTable() builds keys, defaults and serials; getTable() describes them with PostgreSQL's type names",
    async () => {
      await withStore(server, async (store) => {
        const created = await store.tables.create(plan("public", "Parent", PARENT), {
          ifNotExists: false,
        });
        assert.equal(created.created, true);
        const expected = {
          name: "Parent",
          schema: "public",
          columns: [
            {
              id: 1,
              name: "id",
              type: "integer",
              default: "nextval('public.Parent_id_seq')",
              is_nullable: false,
            },
            {
              id: 2,
              name: "Email",
              type: "character varying(200)",
              default: null,
              is_nullable: false,
            },
            { id: 3, name: "score", type: "numeric(10,2)", default: "0", is_nullable: true },
            { id: 4, name: "active", type: "boolean", default: "true", is_nullable: true },
            {
              id: 5,
              name: "born",
              type: "timestamp with time zone",
              default: "now()",
              is_nullable: true,
            },
          ],
          constraints: {
            primary_key: { name: "Parent_pkey", columns: ["id"] },
            unique: [{ name: "Parent_Email_key", columns: ["Email"] }],
            foreign_keys: [],
          },
        };
        assert.deepEqual(created.table, expected);
        assert.deepEqual(await store.tables.get({ schema: "PUBLIC", name: "parent" }), expected);

        const child = await store.tables.create(plan("public", "child", CHILD), {
          ifNotExists: false,
        });
        assert.deepEqual(child.table.constraints.foreign_keys, [{
          name: "child_parent_fkey",
          column: "parent",
          reference_table: "Parent",
          reference_column: "id",
          reference_schema: "public",
        }]);
        await rejectsWith(
          store.tables.create(plan("public", "CHILD", CHILD), { ifNotExists: false }),
          409,
          /Table "public.child" already exists/,
        );
        const again = await store.tables.create(plan("public", "child", CHILD), {
          ifNotExists: true,
        });
        assert.equal(again.created, false);
        assert.deepEqual(again.table, child.table);

        const listing = await store.tables.list({ offset: 1, limit: 5, verbose: true });
        assert.equal(listing.total, 2);
        // A verbose listing is the full table with its estimate of rows: none yet.
        assert.deepEqual(listing.tables, [{ ...expected, rows_estimate: 0 }]);
        await rejectsWith(store.tables.get({ schema: "public", name: "nope" }), 404);
        await rejectsWith(store.tables.get({ schema: "nope", name: "t" }), 404, /Schema "nope"/);
      });
    },
  );

  await t.step(
    "createTable() refuses a foreign key to a missing table or a column that is not a key, and bad defaults, with 422",
    async () => {
      await withStore(server, async (store) => {
        await rejectsWith(
          store.tables.create(plan("public", "child", CHILD), { ifNotExists: false }),
          422,
          /references table "public.Parent", which does not exist/,
        );
        await rejectsWith(
          store.tables.create(
            plan("public", "t", { columns: [{ name: "n", type: "int", default: "'x'" }] }),
            { ifNotExists: false },
          ),
          422,
          /Default of column "n" is not a value of type integer/,
        );
        await rejectsWith(
          store.tables.create(
            plan("public", "t", {
              columns: [{ name: "n", type: "int", default: "1); DROP SCHEMA public; --" }],
            }),
            { ifNotExists: false },
          ),
          422,
          /is not an expression/,
        );
        assert.deepEqual(await store.schemas.list(), ["public"]);
      });
    },
  );

  await t.step(
    "columnTypes() answers PostgreSQL's names and 422 naming a type PostgreSQL lacks",
    async () => {
      await withStore(server, async (store) => {
        assert.deepEqual(
          await store.tables.columnTypes(plan("public", "t", {
            columns: [{ name: "a", type: "VARCHAR(20)[]" }, { name: "b", type: "float" }],
          })),
          ["character varying(20)[]", "double precision"],
        );
        await rejectsWith(
          store.tables.columnTypes(
            plan("public", "t", { columns: [{ name: "n", type: "hugeint" }] }),
          ),
          422,
          /Column "n": Type "HUGEINT" does not exist on PostgreSQL .*: use numeric\(39,0\)/,
        );
      });
    },
  );

  await t.step(
    "dropTable() is 409 while another table references it, then drops it with its sequence",
    async () => {
      await withStore(server, async (store, url) => {
        await store.tables.create(plan("public", "Parent", PARENT), { ifNotExists: false });
        await store.tables.create(plan("public", "child", CHILD), { ifNotExists: false });
        await rejectsWith(
          store.tables.drop({ schema: "public", name: "parent" }),
          409,
          /foreign key "child_parent_fkey" of table "public.child" references it/,
        );
        await rejectsWith(store.schemas.drop("public", true), 409);
        assert.deepEqual(await store.tables.drop({ schema: "public", name: "CHILD" }), {
          schema: "public",
          name: "child",
        });
        await store.tables.drop({ schema: "public", name: "parent" });
        await rejectsWith(store.tables.get({ schema: "public", name: "Parent" }), 404);
        const database = await Database.open({ url });
        try {
          const left = await database.withSession((s) =>
            s.rows(
              `SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace
                 UNION ALL SELECT table_name FROM ${META}.tables`,
            )
          );
          assert.deepEqual(left, []);
        } finally {
          await database.close();
        }
      });
    },
  );

  await t.step("a column keeps its id when renamed, and ids are never reused", async () => {
    await withStore(server, async (store, url) => {
      const { table } = await store.tables.create(plan("public", "t", PARENT), {
        ifNotExists: false,
      });
      const database = await Database.open({ url });
      try {
        // What an update does: rename the column, then rewrite the metadata with ids kept.
        await database.transaction(async (session) => {
          await session.run(`ALTER TABLE public.t RENAME COLUMN "Email" TO mail`);
          await session.run(`ALTER TABLE public.t DROP COLUMN score`);
          const columns = table.columns.filter((c) => c.name !== "score")
            .map((c) => ({ id: c.id, name: c.name === "Email" ? "mail" : c.name }));
          const [row] = await session.rows(`SELECT table_id FROM ${META}.tables`);
          await rewriteTable(
            session,
            row!.table_id as number,
            { schema: "public", name: "t" },
            columns,
            6,
          );
        });
      } finally {
        await database.close();
      }
      const after = await store.tables.get({ schema: "public", name: "t" });
      assert.deepEqual(after.columns.map((c) => [c.id, c.name]), [
        [1, "id"],
        [2, "mail"],
        [4, "active"],
        [5, "born"],
      ]);
      await store.tables.drop({ schema: "public", name: "t" });
      const { table: next } = await store.tables.create(plan("public", "u", PARENT), {
        ifNotExists: false,
      });
      assert.deepEqual(next.columns.map((c) => c.id), [1, 2, 3, 4, 5]);
    });
  });

  await t.step(
    "two stores creating one table at once: one creates it, the other is 409",
    async () => {
      await withStore(server, async (first, url) => {
        const second = await openPostgresStore({ url });
        try {
          const results = await Promise.allSettled(
            [first, second, first, second].map((store) =>
              store.tables.create(plan("public", "Parent", PARENT), { ifNotExists: false })
            ),
          );
          assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
          for (const r of results) {
            if (r.status === "rejected") {
              assert.ok(
                r.reason instanceof ApiError && r.reason.status === 409,
                String(r.reason),
              );
            }
          }
        } finally {
          await second.close();
        }
      });
    },
  );

  await t.step("templates are added, listed, found in any case and dropped", async () => {
    await withStore(server, async (store) => {
      const definition: TemplateDefinition = {
        columns: [{ name: "id", type: "int", is_nullable: false }],
        constraints: { primary_key: null, unique: [], foreign_keys: [] },
      } as unknown as TemplateDefinition;
      const add = (name: string, minor: number) =>
        store.templates.add({
          name,
          version: { major: 1, minor },
          compatibility: "backward",
          definition,
          types: ["integer"],
        }, () => {});
      const first = await add("Orders", 0);
      assert.equal(first.version, "1.0");
      const second = await add("ORDERS", 1);
      assert.equal(second.name, "Orders", "the first spelling is kept");
      await add("items", 0);
      await assert.rejects(
        store.templates.add({
          name: "orders",
          version: { major: 2, minor: 0 },
          compatibility: "none",
          definition,
          types: ["integer"],
        }, () => {
          throw ApiError.conflict("refused");
        }),
        /refused/,
      );
      const versions = await store.templates.versions("orders");
      assert.deepEqual(versions.map((v) => v.template.version), ["1.1", "1.0"]);
      assert.deepEqual(versions[0]!.types, ["integer"]);
      assert.deepEqual(versions[0]!.template.table_template, definition);
      const latest = await store.templates.list({ orderBy: "name_asc", latest: true });
      assert.deepEqual(latest.map((t) => `${t.name} ${t.version}`), [
        "items 1.0",
        "Orders 1.1",
      ]);
      const found = await store.templates.list({
        search: "DER",
        orderBy: "recent",
        latest: false,
      });
      assert.deepEqual(found.map((t) => t.version), ["1.1", "1.0"]);
      assert.equal(await store.templates.drop("orders", "latest"), "Orders");
      assert.deepEqual((await store.templates.versions("Orders")).map((v) => v.version), [
        { major: 1, minor: 0 },
      ]);
      await store.templates.drop("ORDERS");
      assert.deepEqual(await store.templates.versions("orders"), []);
      await rejectsWith(store.templates.drop("orders"), 404);
    });
  });

  await t.step(
    "a keyed write's answer is kept in its own transaction, and only when it commits",
    async () => {
      await withStore(server, async (store) => {
        const since = Date.now() - 1000;
        await store.schemas.create("kept", keyedWrite("k1"));
        const kept = await store.answers.find("tester POST /x", "k1", since);
        assert.deepEqual(kept, {
          fingerprint: "f".repeat(64),
          answer: { status: 201, body: "kept" },
        });
        await rejectsWith(store.schemas.create("KEPT", keyedWrite("k2")), 409);
        assert.equal(await store.answers.find("tester POST /x", "k2", since), undefined);
        assert.equal(await store.answers.find("someone else", "k1", since), undefined);
        await store.answers.keep(keyedWrite<string>("k3"), "same");
        assert.equal(
          (await store.answers.find("tester POST /x", "k3", since))?.answer.body,
          "same",
        );
        await store.answers.forget(Date.now() + 1000);
        assert.equal(await store.answers.find("tester POST /x", "k1", since), undefined);
      });
    },
  );

  await t.step(
    "ready(), healthy(), openTransactions() and memoryByUse() report the database",
    async () => {
      await withStore(server, async (store) => {
        assert.equal(await store.health.ready(), true);
        assert.equal(await store.health.healthy(), true);
        assert.equal(store.health.openTransactions(), 0);
        const memory = await store.health.memoryByUse();
        assert.deepEqual([...memory.keys()], ["backend_contexts", "shared_buffers"]);
        assert.equal(memory.get("shared_buffers"), 256 * 1024 * 1024);
      });
    },
  );
});
