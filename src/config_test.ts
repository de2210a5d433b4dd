import assert from "node:assert/strict";
import { ConfigError, flagsToEnv, parseConfig } from "./config.ts";

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
  assert.equal(config.duckdbThreads, undefined);
  assert.equal(config.duckdbBlockBytes, 256 * 1024);
  assert.deepEqual(config.auth.key, { kind: "generated", secretPath: "./data/jwt-secret" });
  assert.equal(config.databaseUrl, undefined);
  assert.equal(config.databasePoolSize, 10);
  assert.equal(config.backupIntervalMs, undefined);
  assert.equal(config.backupKeep, 7);
});

Deno.test("DUCKDB_MEMORY_LIMIT unset is left to the store (half the memory DuckDB sees)", () => {
  assert.equal(parseConfig({}).duckdbMemoryBytes, undefined);
  assert.equal(parseConfig({ DUCKDB_MEMORY_LIMIT: " " }).duckdbMemoryBytes, undefined);
  assert.equal(parseConfig({ DUCKDB_MEMORY_LIMIT: "1GiB" }).duckdbMemoryBytes, 1024 ** 3);
});

Deno.test("parseConfig() takes a postgres:// or postgresql:// DATABASE_URL", () => {
  for (const url of ["postgres://u:p@db:5432/tables", "postgresql:///tables?host=/run/pg"]) {
    assert.equal(parseConfig({ DATABASE_URL: ` ${url} ` }).databaseUrl, url);
  }
  assert.equal(parseConfig({ DATABASE_URL: "" }).databaseUrl, undefined);
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
    DUCKDB_THREADS: "3",
    DATABASE_POOL_SIZE: "25",
    MEMORY_TRIM_SECONDS: "0",
    QUERY_TIMEOUT_SECONDS: "5",
    BACKUP_INTERVAL: "6h",
    BACKUP_KEEP: "3",
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
  assert.equal(config.duckdbThreads, 3);
  assert.equal(config.databasePoolSize, 25);
  assert.equal(config.memoryTrimMs, 0);
  assert.equal(config.queryTimeoutMs, 5_000);
  assert.equal(config.backupIntervalMs, 6 * 3600 * 1000);
  assert.equal(config.backupKeep, 3);
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
    [{ DUCKDB_THREADS: "0" }, /DUCKDB_THREADS "0" is not a number of threads/],
    [{ DUCKDB_THREADS: "two" }, /DUCKDB_THREADS "two"/],
    [{ DATABASE_POOL_SIZE: "0" }, /DATABASE_POOL_SIZE "0" is not a number of connections/],
    [{ DATABASE_POOL_SIZE: "1001" }, /DATABASE_POOL_SIZE "1001"/],
    [{ MEMORY_TRIM_SECONDS: "-1" }, /MEMORY_TRIM_SECONDS "-1"/],
    [{ MEMORY_TRIM_SECONDS: "soon" }, /MEMORY_TRIM_SECONDS "soon"/],
    [{ MEMORY_TRIM_SECONDS: "3601" }, /MEMORY_TRIM_SECONDS "3601"/],
    [{ QUERY_TIMEOUT_SECONDS: "0" }, /QUERY_TIMEOUT_SECONDS "0"/],
    [{ AUTH_JWT_SECRET: "short" }, /AUTH_JWT_SECRET is shorter than 32/],
    [{ DATABASE_URL: "mysql://db/t" }, /DATABASE_URL is not a postgres:\/\/ or postgresql:\/\//],
    [{ DATABASE_URL: "postgres://a b" }, /DATABASE_URL is not a postgres/],
    [{ CORS_ORIGINS: "app.example" }, /CORS_ORIGINS "app.example" is not an origin/],
    [{ CORS_ORIGINS: "https://a.example/app" }, /CORS_ORIGINS "https:\/\/a.example\/app"/],
    [{ CORS_ORIGINS: "https://a.example,ftp://b.example" }, /"ftp:\/\/b.example"/],
    [{ CORS_ORIGINS: "https://a.example,," }, /CORS_ORIGINS "https:\/\/a.example,," has an empty/],
    [{ CORS_ORIGINS: "*, https://a.example" }, /CORS_ORIGINS "\*, https:\/\/a.example"/],
    [{ BACKUP_INTERVAL: "30s" }, /BACKUP_INTERVAL "30s" is not a duration of a minute or more/],
    [{ BACKUP_INTERVAL: "daily" }, /BACKUP_INTERVAL "daily"/],
    [{ BACKUP_KEEP: "0" }, /BACKUP_KEEP "0" is not a number of backups/],
    [
      { BACKUP_INTERVAL: "1h", DATABASE_URL: "postgres://db/t" },
      /BACKUP_INTERVAL is for the DuckDB file; back up PostgreSQL with pg_dump/,
    ],
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

Deno.test("parseConfig() turns the PostgreSQL listener on at 5433 on loopback, off elsewhere", () => {
  assert.equal(parseConfig({}).pgwire?.port, 5433);
  assert.equal(parseConfig({ HOST: "::1" }).pgwire?.port, 5433);
  assert.equal(parseConfig({ PORT: "0" }).pgwire?.port, 0);
  assert.equal(parseConfig({ PGWIRE_PORT: "off" }).pgwire, undefined);
  assert.equal(parseConfig({ HOST: "0.0.0.0" }).pgwire, undefined);
  const tls = { PGWIRE_TLS_CERT: "/c.pem", PGWIRE_TLS_KEY: "/k.pem" };
  const open = parseConfig({ HOST: "0.0.0.0", PGWIRE_PORT: "6432", ...tls }).pgwire;
  assert.deepEqual(open?.tls, { cert: "/c.pem", key: "/k.pem" });
  assert.equal(open?.port, 6432);
  assert.equal(open?.maxConnections, 100);
});

Deno.test("parseConfig() refuses the PostgreSQL listener off loopback without TLS, with every other problem", () => {
  assert.throws(
    () => parseConfig({ HOST: "0.0.0.0", PGWIRE_PORT: "5433", PGWIRE_MAX_CONNECTIONS: "none" }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /PGWIRE_TLS_CERT and PGWIRE_TLS_KEY/);
      assert.match(error.message, /PGWIRE_MAX_CONNECTIONS "none"/);
      return true;
    },
  );
  assert.throws(() => parseConfig({ PGWIRE_TLS_CERT: "/c.pem" }), /set both PGWIRE_TLS_CERT/);
  assert.throws(() => parseConfig({ PGWIRE_PORT: "70000" }), /PGWIRE_PORT "70000"/);
});
