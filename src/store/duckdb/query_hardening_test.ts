/**
 * What DuckDB 1.5.5's own settings do and do not stop, as the query guard's defence in depth
 * relies on them: facts about the engine, kept as tests so an upgrade that changes one fails
 * here. The instance is hardened as database_open.ts does it.
 */
import assert from "node:assert/strict";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";

async function hardened(spool: string) {
  const instance = await DuckDBInstance.create(":memory:", {
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
    temp_directory: `${spool}/tmp`,
  });
  const setup = await instance.connect();
  await setup.run(`SET allowed_directories=['${spool}/']`);
  await setup.run("SET enable_external_access=false");
  await setup.run("SET lock_configuration=true");
  setup.closeSync();
  return instance;
}

async function outcome(connection: DuckDBConnection, sql: string): Promise<string> {
  try {
    await connection.runAndReadAll(sql);
    return "ok";
  } catch (error) {
    return (error as Error).message.split("\n")[0]!;
  }
}

async function withHardened(
  test: (connection: DuckDBConnection, spool: string) => Promise<void>,
): Promise<void> {
  const spool = await Deno.makeTempDir();
  await Deno.writeTextFile(`${spool}/upload-1.json`, '[{"secret": "another client\'s row"}]');
  const instance = await hardened(spool);
  const connection = await instance.connect();
  try {
    await test(connection, spool);
  } finally {
    connection.closeSync();
    instance.closeSync();
    await Deno.remove(spool, { recursive: true });
  }
}

Deno.test("DuckDB sets enable_external_access only globally, and never back on", async () => {
  const instance = await DuckDBInstance.create(":memory:");
  const one = await instance.connect();
  const other = await instance.connect();
  try {
    assert.match(
      await outcome(one, "SET SESSION enable_external_access=false"),
      /can only be set globally/,
    );
    assert.equal(await outcome(one, "SET enable_external_access=false"), "ok");
    // A plain SET on one connection reaches every other.
    assert.match(
      await outcome(other, "SELECT * FROM read_csv('/etc/hostname')"),
      /disabled by configuration/,
    );
    assert.match(
      await outcome(other, "SET GLOBAL enable_external_access=true"),
      /Cannot enable external access while database is running/,
    );
  } finally {
    one.closeSync();
    other.closeSync();
    instance.closeSync();
  }
});

Deno.test("DuckDB without external access still reads the spool directory, by reader or by name", async () => {
  await withHardened(async (connection, spool) => {
    assert.equal(
      await outcome(connection, `SELECT * FROM read_json('${spool}/upload-1.json')`),
      "ok",
    );
    // Why the guard refuses replacement scans and glob: the spool holds other clients' uploads.
    assert.equal(await outcome(connection, `FROM '${spool}/upload-1.json'`), "ok");
    assert.equal(await outcome(connection, `SELECT * FROM glob('${spool}/*')`), "ok");
    assert.match(
      await outcome(connection, "SELECT * FROM read_csv('/etc/hostname')"),
      /disabled by configuration/,
    );
    const outside = await Deno.makeTempFile({ suffix: ".csv" });
    try {
      assert.match(await outcome(connection, `FROM '${outside}'`), /disabled by configuration/);
    } finally {
      await Deno.remove(outside);
    }
  });
});

Deno.test("DuckDB adds the temporary directory to the allowed directories", async () => {
  await withHardened(async (connection, spool) => {
    const reader = await connection.runAndReadAll(
      "SELECT current_setting('allowed_directories')::VARCHAR[] AS d",
    );
    const [[directories]] = reader.getRowsJS() as [[string[]]];
    assert.ok(directories.includes(`${spool}/`));
    assert.ok(directories.some((d) => d.startsWith(`${spool}/tmp`)), String(directories));
  });
});

Deno.test("DuckDB's lock_configuration stops option changes, statement_timeout too", async () => {
  await withHardened(async (connection) => {
    for (
      const sql of [
        "SET threads=1",
        "SET statement_timeout='1s'",
        "SET TimeZone='Europe/Oslo'",
        "SET allowed_directories=['/']",
        "SET lock_configuration=false",
        "RESET threads",
      ]
    ) {
      assert.match(await outcome(connection, sql), /configuration has been locked/, sql);
    }
  });
});

Deno.test("DuckDB's lock_configuration leaves search paths, variables, ATTACH and macros open", async () => {
  await withHardened(async (connection) => {
    // None of these is a query, so the guard refuses them all; the lock alone would not.
    for (
      const sql of [
        "SET search_path='main'",
        "USE memory.main",
        "SET VARIABLE v = 1",
        "ATTACH ':memory:' AS other",
        "CREATE MACRO main.abs(x) AS 42",
        "CREATE TEMP TABLE t AS SELECT 1",
      ]
    ) {
      assert.equal(await outcome(connection, sql), "ok", sql);
    }
    const reader = await connection.runAndReadAll("SELECT abs(-1) AS a, system.main.abs(-1) AS b");
    assert.deepEqual(reader.getRowsJS(), [[42, 1]]);
  });
});

Deno.test("DuckDB without external access refuses INSTALL, LOAD and URLs", async () => {
  await withHardened(async (connection) => {
    assert.notEqual(await outcome(connection, "INSTALL httpfs"), "ok");
    assert.notEqual(await outcome(connection, "LOAD httpfs"), "ok");
    assert.match(
      await outcome(connection, "SELECT * FROM read_csv('https://example.com/x.csv')"),
      /disabled by configuration/,
    );
  });
});
