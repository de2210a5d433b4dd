import assert from "node:assert/strict";
import type { CatalogSnapshot } from "../shared/wire_catalog.ts";
import type { QueryRequest } from "../store.ts";
import { catalogDatabase } from "./wire_catalog.ts";

const SNAPSHOT: CatalogSnapshot = {
  schemas: ["public"],
  tables: [],
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
