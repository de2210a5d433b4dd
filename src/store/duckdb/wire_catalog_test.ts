import assert from "node:assert/strict";
import type { CatalogSnapshot } from "../shared/wire_catalog.ts";
import type { QueryRequest } from "../store.ts";
import { catalogDatabase } from "./wire_catalog.ts";

const SNAPSHOT: CatalogSnapshot = {
  schemas: ["public"],
  tables: [{
    schema: "public",
    name: "items",
    columns: [{ name: "id", oid: 23, typmod: -1, notNull: true, default: null }],
    table: {
      schema: "public",
      name: "items",
      columns: [{ id: 1, name: "id", type: "INTEGER", default: null, is_nullable: false }],
      constraints: { primary_key: null, unique: [], foreign_keys: [] },
    },
    rowsEstimate: 3,
  }],
  defaultSchema: "public",
  user: "catalog_test",
  database: "tables",
};

function request(sql: string): QueryRequest {
  return {
    sql,
    params: [],
    defaultSchema: "public",
    visibleSchemas: ["public"],
    timeoutMs: 10_000,
    client: { user: SNAPSHOT.user, database: SNAPSHOT.database },
  };
}

async function rows(sql: string): Promise<(string | null)[][]> {
  const answer = await (await catalogDatabase(SNAPSHOT)).open(request(sql));
  try {
    return await answer.next(100);
  } finally {
    await answer.close();
  }
}

Deno.test("a catalog query runs as one SELECT, so none changes the catalog other sessions share", async () => {
  const namespaces = "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname = 'public'";
  assert.deepEqual(await rows(namespaces), [["public"]]);
  for (
    const attack of [
      // An escape string whose escaped quotes hide an array literal: respelled as if that
      // literal stood outside the string, the text would end early and run the DROP after.
      "SELECT relname FROM pg_catalog.pg_class WHERE relname = " +
      String.raw`E'\' x \'{ || }'::text[] OR relname = ') AS d; ` +
      "DROP TABLE wire_pg.pg_namespace; SELECT * FROM (SELECT 1 --'\n",
      // A query that closes the parenthesis it is wrapped in.
      "SELECT 1 AS x) AS d; DROP TABLE wire_pg.pg_namespace; SELECT * FROM (SELECT 1",
    ]
  ) {
    // Refused, or read as the one SELECT it is, harmless either way.
    await rows(attack).catch(() => {});
    assert.deepEqual(await rows(namespaces), [["public"]], attack);
  }
  for (
    const refused of [
      "SELECT 1 FROM pg_catalog.pg_class; DROP TABLE wire_pg.pg_namespace",
      "SELECT $$x$$ FROM pg_catalog.pg_class",
      "DROP TABLE wire_pg.pg_namespace",
    ]
  ) {
    await assert.rejects(rows(refused), refused);
  }
  assert.deepEqual(await rows(namespaces), [["public"]]);
});

Deno.test("the privilege functions grant reading what the catalog holds, and nothing else", async () => {
  assert.deepEqual(
    await rows(
      "SELECT has_table_privilege('public.items', 'SELECT'), " +
        "has_table_privilege('items', 'INSERT'), " +
        "has_table_privilege(987654321, 'SELECT'), " +
        "has_schema_privilege('public', 'USAGE'), has_schema_privilege('public', 'CREATE'), " +
        "has_database_privilege('tables', 'CONNECT'), has_database_privilege('tables', 'CREATE')",
    ),
    [["t", "f", "f", "t", "f", "t", "f"]],
  );
});

Deno.test("pg_stat_user_tables gives the engine's estimate of a table's rows", async () => {
  assert.deepEqual(
    await rows("SELECT relname, n_live_tup FROM pg_catalog.pg_stat_user_tables"),
    [["items", "3"]],
  );
});
