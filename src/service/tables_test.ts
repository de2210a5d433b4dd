import assert from "node:assert/strict";
import { MAX_COLUMNS, type TablePlan } from "../catalog/definition.ts";
import type { Table } from "../catalog/model.ts";
import type { StoredTemplate } from "../catalog/templates.ts";
import { ApiError } from "../errors.ts";
import type { Store } from "../store/store.ts";
import { createTable, updateTable } from "./tables.ts";
import { planFromTemplate } from "./templates.ts";

const ref = { schema: "public", name: "orders" };

function stored(version: string): StoredTemplate {
  const [major, minor] = version.split(".").map(Number) as [number, number];
  return {
    version: { major, minor },
    types: ["BIGINT"],
    template: {
      name: "Orders",
      version,
      compatibility: "none",
      created_at: "2026-01-01T00:00:00.000Z",
      table_template: {
        columns: [
          { name: `id_${major}_${minor}`, type: "BIGINT", is_nullable: false, default: null },
        ],
        constraints: { primary_key: null, unique: [], foreign_keys: [] },
      },
    },
  };
}

/** A store with the contract's limits and only what a test gives; any other call fails the test. */
/** A store of `parts`' operations only: any other fails the test. */
function fakeStore(
  parts: {
    templates?: Partial<Store["templates"]>;
    tables?: Partial<Store["tables"]>;
    maxColumnNameBytes?: number;
  },
): Store {
  const limits = {
    maxColumns: MAX_COLUMNS,
    maxColumnNameBytes: parts.maxColumnNameBytes ?? Number.POSITIVE_INFINITY,
  };
  const resource = (name: string, given: object = {}) =>
    new Proxy(given, {
      get: (target, key: string) =>
        target[key as keyof typeof target] ??
          (() => assert.fail(`unexpected store.${name}.${key}()`)),
    });
  return new Proxy(limits, {
    get: (target, key: string) =>
      target[key as keyof typeof target] ??
        resource(key, parts[key as "tables" | "templates"]),
  }) as unknown as Store;
}

Deno.test("planFromTemplate() plans the asked-for version and records it as the origin", async () => {
  const store = fakeStore({
    templates: { versions: () => Promise.resolve([stored("2.0"), stored("1.0")]) },
  });
  const latest = await planFromTemplate(store, ref, { name: "orders", version: "latest" });
  assert.deepEqual(latest?.template, { name: "Orders", version: "2.0" });
  assert.equal(latest?.columns[0]?.name, "id_2_0");
  const first = await planFromTemplate(store, ref, {
    name: "orders",
    version: { major: 1, minor: 0 },
  });
  assert.equal(first?.columns[0]?.name, "id_1_0");
  assert.equal(await planFromTemplate(store, ref, undefined), undefined);
  await assert.rejects(
    planFromTemplate(store, ref, { name: "orders", version: { major: 3, minor: 0 } }),
    (error) => error instanceof ApiError && error.status === 404,
  );
});

Deno.test("createTable() refuses a template and a body definition together, storing nothing", async () => {
  const store = fakeStore({ templates: { versions: () => Promise.resolve([stored("1.0")]) } });
  await assert.rejects(
    createTable(store, ref, { columns: [] }, {
      template: { name: "orders", version: "latest" },
      ifNotExists: false,
    }),
    /not both/,
  );
});

Deno.test("createTable() plans the body's definition at the table's address", async () => {
  let planned: TablePlan | undefined;
  const store = fakeStore({
    tables: {
      create: (plan) => {
        planned = plan;
        return Promise.resolve({ table: {} as Table, created: true });
      },
    },
  });
  await createTable(store, ref, { columns: [{ name: "id", type: "BIGINT" }] }, {
    ifNotExists: false,
  });
  assert.deepEqual(planned?.ref, ref);
  assert.equal(planned?.columns[0]?.name, "id");
});

Deno.test("createTable() refuses a column name longer than the store keeps, before creating", async () => {
  const store = fakeStore({ maxColumnNameBytes: 63 });
  await assert.rejects(
    createTable(store, ref, { columns: [{ name: "日".repeat(22), type: "BIGINT" }] }, {
      ifNotExists: false,
    }),
    /Column name "日+" is 66 bytes of UTF-8; at most 63 are allowed/,
  );
});

Deno.test("updateTable() judges the table as the store finds it before planning the update", async () => {
  const current = { ...ref, columns: [], constraints: {} } as unknown as Table;
  const store = fakeStore({
    tables: {
      update: (_ref, decide) => {
        decide(current);
        return assert.fail("the update went on past a refusing expect");
      },
    },
  });
  const refused = new ApiError(409, "edit_conflict", "changed since it was read");
  await assert.rejects(
    updateTable(store, ref, { name: "renamed" }, {
      expect: (table) => {
        assert.equal(table, current);
        throw refused;
      },
    }),
    (error) => error === refused,
  );
});
