import assert from "node:assert/strict";
import { ConfigError, flagsToEnv, parseConfig } from "../src/config.ts";
import { runToExit, TestServer } from "./helpers/server.ts";

Deno.test("parseConfig() applies the documented defaults", () => {
  const config = parseConfig({});
  assert.equal(config.host, "127.0.0.1");
  assert.equal(config.port, 8080);
  assert.equal(config.dataDir, "./data");
  assert.equal(config.databasePath, "./data/tables.duckdb");
  assert.equal(config.maxUploadBytes, 1024 ** 3);
  assert.equal(config.maxJsonBytes, 10 * 1024 ** 2);
  assert.equal(config.logLevel, "info");
  assert.equal(config.memoryTrimMs, 10_000);
  assert.equal(config.queryTimeoutMs, 30_000);
  assert.equal(config.duckdbBlockBytes, 256 * 1024);
  assert.deepEqual(config.auth.key, { kind: "generated", secretPath: "./data/jwt-secret" });
});

Deno.test("parseConfig() reads every variable", () => {
  const config = parseConfig({
    HOST: "0.0.0.0",
    PORT: "9000",
    DATA_DIR: "/srv/tables/",
    AUTH_JWT_SECRET: "s".repeat(32),
    AUTH_ISSUER: "https://issuer",
    AUTH_AUDIENCE: "tables",
    LOG_LEVEL: "DEBUG",
    MAX_UPLOAD_BYTES: "2GiB",
    MAX_JSON_BYTES: "512k",
    DUCKDB_MEMORY_LIMIT: "96MiB",
    DUCKDB_BLOCK_SIZE: "16KiB",
    MEMORY_TRIM_SECONDS: "0",
    QUERY_TIMEOUT_SECONDS: "5",
  });
  assert.equal(config.host, "0.0.0.0");
  assert.equal(config.port, 9000);
  assert.equal(config.databasePath, "/srv/tables/tables.duckdb");
  assert.deepEqual(config.auth, {
    key: { kind: "hmac", secret: "s".repeat(32) },
    issuer: "https://issuer",
    audience: "tables",
  });
  assert.equal(config.logLevel, "debug");
  assert.equal(config.maxUploadBytes, 2 * 1024 ** 3);
  assert.equal(config.maxJsonBytes, 512 * 1024);
  assert.equal(config.duckdbMemoryBytes, 96 * 1024 ** 2);
  assert.equal(config.duckdbBlockBytes, 16 * 1024);
  assert.equal(config.memoryTrimMs, 0);
  assert.equal(config.queryTimeoutMs, 5_000);
});

Deno.test("parseConfig() reads CORS_ORIGINS as a list of origins, none by default", () => {
  assert.deepEqual(parseConfig({}).corsOrigins, []);
  assert.deepEqual(
    parseConfig({
      CORS_ORIGINS: " https://App.Example , http://localhost:5173/,https://b.example:443",
    })
      .corsOrigins,
    ["https://app.example", "http://localhost:5173", "https://b.example"],
  );
  assert.deepEqual(parseConfig({ CORS_ORIGINS: "*" }).corsOrigins, ["*"]);
});

Deno.test("parseConfig() rejects each bad variable, naming it", () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: "http" }, /PORT "http"/],
    [{ PORT: "70000" }, /PORT "70000"/],
    [{ HOST: "a b" }, /HOST "a b"/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL "loud"/],
    [{ MAX_UPLOAD_BYTES: "lots" }, /MAX_UPLOAD_BYTES "lots"/],
    [{ MAX_JSON_BYTES: "0" }, /MAX_JSON_BYTES "0"/],
    [{ MAX_JSON_BYTES: "10 parsecs" }, /MAX_JSON_BYTES/],
    [{ DUCKDB_MEMORY_LIMIT: "64MiB" }, /DUCKDB_MEMORY_LIMIT "64MiB" is below 96MiB/],
    [{ DUCKDB_BLOCK_SIZE: "8KiB" }, /DUCKDB_BLOCK_SIZE "8KiB" is not one of DuckDB's block sizes/],
    [{ DUCKDB_BLOCK_SIZE: "100000" }, /DUCKDB_BLOCK_SIZE "100000"/],
    [{ MEMORY_TRIM_SECONDS: "-1" }, /MEMORY_TRIM_SECONDS "-1"/],
    [{ MEMORY_TRIM_SECONDS: "soon" }, /MEMORY_TRIM_SECONDS "soon"/],
    [{ MEMORY_TRIM_SECONDS: "3601" }, /MEMORY_TRIM_SECONDS "3601"/],
    [{ QUERY_TIMEOUT_SECONDS: "0" }, /QUERY_TIMEOUT_SECONDS "0"/],
    [{ AUTH_JWT_SECRET: "short" }, /AUTH_JWT_SECRET is shorter than 32/],
    [{ CORS_ORIGINS: "app.example" }, /CORS_ORIGINS "app.example" is not an origin/],
    [{ CORS_ORIGINS: "https://a.example/app" }, /CORS_ORIGINS "https:\/\/a.example\/app"/],
    [{ CORS_ORIGINS: "https://a.example,ftp://b.example" }, /"ftp:\/\/b.example"/],
    [{ CORS_ORIGINS: "https://a.example,," }, /CORS_ORIGINS "https:\/\/a.example,," has an empty/],
    [{ CORS_ORIGINS: "*, https://a.example" }, /CORS_ORIGINS "\*, https:\/\/a.example"/],
    [
      { AUTH_JWT_SECRET: "s".repeat(40), AUTH_JWKS_FILE: "/x.json" },
      /only one of AUTH_JWT_SECRET, AUTH_JWKS_FILE/,
    ],
  ];
  for (const [env, pattern] of cases) {
    assert.throws(() => parseConfig(env), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, pattern);
      assert.ok(!error.message.includes("\n"), "one line");
      return true;
    });
  }
});

Deno.test("parseConfig() reports every bad variable at once", () => {
  assert.throws(
    () => parseConfig({ PORT: "x", LOG_LEVEL: "y", MAX_JSON_BYTES: "z", CORS_ORIGINS: "w" }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.problems.length, 4);
      return true;
    },
  );
});

Deno.test("flagsToEnv() mirrors variables and rejects unknown flags", () => {
  assert.deepEqual(flagsToEnv(["--host=0.0.0.0", "--log-level", "warn"]), {
    HOST: "0.0.0.0",
    LOG_LEVEL: "warn",
  });
  assert.throws(() => flagsToEnv(["--colour", "red"]), /unknown flag --colour/);
  assert.throws(() => flagsToEnv(["--port"]), /needs a value/);
  assert.throws(() => flagsToEnv(["stray"]), /unexpected argument/);
});

Deno.test("start-up stops with one clear line and a non-zero exit on bad configuration", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    await t.step("a bad PORT", async () => {
      const result = await runToExit({ PORT: "eighty", DATA_DIR: dir });
      assert.notEqual(result.code, 0);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(result.stderr, /PORT "eighty"/);
    });

    await t.step("a flag mirrors its variable", async () => {
      const result = await runToExit({ DATA_DIR: dir }, ["--port", "eighty"]);
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /PORT "eighty"/);
    });

    await t.step("a DATA_DIR that is a file", async () => {
      await Deno.writeTextFile(`${dir}/file`, "");
      const result = await runToExit({ PORT: "0", DATA_DIR: `${dir}/file` });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /DATA_DIR/);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
    });

    await t.step("an unreadable PEM key file", async () => {
      const result = await runToExit({
        PORT: "0",
        DATA_DIR: dir,
        AUTH_JWT_PUBLIC_KEY: `${dir}/missing.pem`,
      });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /AUTH_JWT_PUBLIC_KEY/);
    });

    await t.step("a PEM value that is not a public key", async () => {
      const result = await runToExit({
        PORT: "0",
        DATA_DIR: dir,
        AUTH_JWT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----",
      });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /AUTH_JWT_PUBLIC_KEY is not a PEM public key/);
    });

    await t.step("a JWKS file that is not JSON", async () => {
      await Deno.writeTextFile(`${dir}/jwks.json`, "{not json");
      const result = await runToExit({
        PORT: "0",
        DATA_DIR: dir,
        AUTH_JWKS_FILE: `${dir}/jwks.json`,
      });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /AUTH_JWKS_FILE/);
    });

    await t.step("a database file that is not a DuckDB database is left untouched", async () => {
      const dataDir = `${dir}/corrupt`;
      await Deno.mkdir(dataDir);
      const junk = "this is not a database\n".repeat(500);
      await Deno.writeTextFile(`${dataDir}/tables.duckdb`, junk);
      const result = await runToExit({
        PORT: "0",
        DATA_DIR: dataDir,
        AUTH_JWT_SECRET: "s".repeat(32),
      });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /Cannot open database/);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.equal(await Deno.readTextFile(`${dataDir}/tables.duckdb`), junk);
    });

    await t.step("a port already in use", async () => {
      const server = await TestServer.start();
      try {
        const result = await runToExit({
          PORT: String(server.port),
          DATA_DIR: `${dir}/other`,
          AUTH_JWT_SECRET: "s".repeat(32),
        });
        assert.notEqual(result.code, 0);
        assert.match(result.stderr, new RegExp(`Cannot listen on 127.0.0.1:${server.port}`));
      } finally {
        await server.dispose();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
