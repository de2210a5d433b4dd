import assert from "node:assert/strict";
import { openStore } from "./mod.ts";

Deno.test("openStore() confines DuckDB: no files outside the spool directory, no SET, no extensions", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  await Deno.mkdir(`${dir}/spool`);
  await Deno.mkdir(`${dir}/tmp`);
  await Deno.writeTextFile(`${dir}/spool/ok.csv`, "a,b\n1,2\n");
  await Deno.writeTextFile(`${dir}/outside.csv`, "a,b\n1,2\n");
  const store = await openStore({
    path: `${dir}/t.duckdb`,
    spoolDir: `${dir}/spool`,
    tempDir: `${dir}/tmp`,
  });
  try {
    await store.database.withSession(async (session) => {
      const rows = await session.rows(`SELECT count(*) AS n FROM read_csv('${dir}/spool/ok.csv')`);
      assert.equal(rows[0]?.n, 1n);
    });
    const refused = [
      "SELECT * FROM read_csv('/etc/hostname')",
      `SELECT * FROM read_csv('${dir}/outside.csv')`,
      `SELECT * FROM read_csv('${dir}/spool/../outside.csv')`,
      "SELECT * FROM read_text('/etc/passwd')",
      `COPY (SELECT 1) TO '${dir}/written.csv'`,
      `ATTACH '${dir}/other.duckdb' AS other`,
      "SET enable_external_access=true",
      "SET allowed_directories=['/']",
      "SET lock_configuration=false",
      "INSTALL httpfs",
      "LOAD httpfs",
    ];
    for (const sql of refused) {
      await assert.rejects(
        store.database.withSession((session) => session.run(sql)),
        Error,
        `must be refused: ${sql}`,
      );
    }
    await assert.rejects(Deno.stat(`${dir}/written.csv`), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(`${dir}/other.duckdb`), Deno.errors.NotFound);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
