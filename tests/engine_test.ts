import assert from "node:assert/strict";
import pg from "pg";
import { ENGINE } from "./helpers/engine.ts";
import { ok, TestServer } from "./helpers/server.ts";

/** Whether the database of `url` exists, asked through the server's `postgres` database. */
async function databaseExists(url: string): Promise<boolean> {
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.slice(1));
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [
      name,
    ]);
    return rowCount === 1;
  } finally {
    await client.end();
  }
}

Deno.test(`TestServer runs on the engine TEST_ENGINE names (${ENGINE}), keeps its tables across a restart, and dispose() removes them`, async () => {
  const server = await TestServer.start();
  const url = server.env.DATABASE_URL;
  try {
    if (ENGINE === "duckdb") assert.equal(url, undefined);
    else assert.match(url ?? "", /^postgres:\/\/.*\/t_[0-9a-f]{32}\?/);
    ok(
      await server.request("POST", "table/kept", {
        body: { table: { columns: [{ name: "id", type: "integer" }] } },
      }),
    );
    await server.restart();
    assert.equal(server.env.DATABASE_URL, url);
    ok(await server.request("GET", "table/kept"));
  } finally {
    await server.dispose();
  }
  if (url) assert.equal(await databaseExists(url), false, "dispose() left the database");
  else await assert.rejects(Deno.stat(`${server.dataDir}/tables.duckdb`), Deno.errors.NotFound);
});

Deno.test({
  name: "TestServer.start() with a DATABASE_URL of its own leaves that database alone",
  ignore: ENGINE === "duckdb",
  async fn() {
    const first = await TestServer.start();
    const url = first.env.DATABASE_URL!;
    const second = await TestServer.start({ DATABASE_URL: url });
    try {
      ok(await first.request("POST", "schema/shared"));
      await second.dispose();
      assert.equal(await databaseExists(url), true);
      ok(await first.request("GET", "table?schema=shared"));
    } finally {
      await second.dispose();
      await first.dispose();
    }
  },
});
