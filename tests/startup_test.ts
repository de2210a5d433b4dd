import assert from "node:assert/strict";
import { ok, runToExit, sha256Hex, TEST_SECRET, TestServer } from "./helpers/server.ts";
import { onDuckDB } from "./helpers/engine.ts";

/**
 * What a start may add to a data directory before it refuses the database: the empty spool
 * and spill directories, made before the open because DuckDB is given their real paths.
 * Nothing else: no `.wal`, no temporary file, no secret (the tests configure one).
 */
const MADE_AT_START = ["spool/", "tmp/"];

let made: Promise<Uint8Array> | undefined;

/** A database written by the service: a table with 2,000 rows, then a SIGTERM stop. */
function realDatabase(): Promise<Uint8Array> {
  made ??= (async () => {
    const server = await TestServer.start();
    try {
      const data = Array.from(
        { length: 2000 },
        (_, i) => ({ id: i, name: `name ${i} `.repeat(5) }),
      );
      ok(
        await server.request("POST", "table/things/upload/json", {
          body: {
            table: { columns: [{ name: "id", type: "bigint" }, { name: "name", type: "varchar" }] },
            data,
          },
        }),
      );
      assert.equal(await server.stop(), 0, server.stderr);
      assert.deepEqual(await listing(server.dataDir), [
        "backups/",
        "spool/",
        "tables.duckdb",
        "tmp/",
      ]);
      return await Deno.readFile(`${server.dataDir}/tables.duckdb`);
    } finally {
      await server.dispose();
    }
  })();
  return made;
}

/** Every path under `dir`, relative, directories with a trailing slash, sorted. */
async function listing(dir: string, prefix = ""): Promise<string[]> {
  const paths: string[] = [];
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const path = `${prefix}${entry.name}${entry.isDirectory ? "/" : ""}`;
    paths.push(path);
    if (entry.isDirectory) paths.push(...await listing(dir, path));
  }
  return paths.sort();
}

/** A new data directory holding `bytes` as its database file. */
async function dataDirWith(parent: string, name: string, bytes: Uint8Array): Promise<string> {
  const dir = `${parent}/${name}`;
  await Deno.mkdir(dir);
  await Deno.writeFile(`${dir}/tables.duckdb`, bytes);
  return dir;
}

/**
 * Starts the service on `dir` and asserts it refuses: a non-zero exit, exactly one line on
 * stderr matching `pattern` and nothing on stdout, the database file's bytes unchanged, and
 * nothing in the directory but what was there and {@link MADE_AT_START}. Returns the line.
 */
async function assertRefused(
  dir: string,
  pattern: RegExp,
  env: Record<string, string> = {},
): Promise<string> {
  const file = `${dir}/tables.duckdb`;
  const hash = await sha256Hex(await Deno.readFile(file));
  const before = await listing(dir);
  const result = await runToExit({
    PORT: "0",
    DATA_DIR: dir,
    AUTH_JWT_SECRET: TEST_SECRET,
    ...env,
  });
  assert.notEqual(result.code, 0, result.stdout);
  assert.equal(result.stdout, "");
  assert.match(result.stderr, /^[^\n]+\n$/, `not one line: ${result.stderr}`);
  assert.doesNotMatch(result.stderr, /Uncaught|\bat .*:\d+:\d+/);
  assert.match(result.stderr, pattern);
  assert.equal(await sha256Hex(await Deno.readFile(file)), hash, "the database file changed");
  const after = await listing(dir);
  assert.deepEqual(before.filter((path) => !after.includes(path)), [], "a file went missing");
  assert.deepEqual(
    after.filter((path) => !before.includes(path) && !MADE_AT_START.includes(path)),
    [],
    "a file was left behind",
  );
  return result.stderr.trimEnd();
}

function quoted(path: string): string {
  return `"${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`;
}

onDuckDB.test("start-up refuses a damaged DuckDB file with one line, leaving it untouched", async (t) => {
  const original = await realDatabase();
  const parent = await Deno.makeTempDir({ prefix: "startup-test-" });
  const damaged = async (name: string, damage: (bytes: Uint8Array) => Uint8Array) => {
    const dir = await dataDirWith(parent, name, damage(original.slice()));
    return { dir, file: quoted(`${dir}/tables.duckdb`) };
  };
  try {
    await t.step("its main header overwritten", async () => {
      const { dir, file } = await damaged("main-header", (b) => b.fill(0x41, 0, 4096));
      await assertRefused(
        dir,
        new RegExp(`^Cannot open database ${file}: it is not a DuckDB database file$`, "m"),
      );
    });

    await t.step("its database headers overwritten", async () => {
      const { dir, file } = await damaged("db-headers", (b) => b.fill(0x41, 4096, 3 * 4096));
      await assertRefused(
        dir,
        new RegExp(`^Cannot open database ${file}: the file is damaged \\(Corrupt database file`),
      );
    });

    await t.step("truncated to half", async () => {
      const { dir, file } = await damaged("half", (b) => b.subarray(0, b.length >> 1));
      await assertRefused(dir, new RegExp(`^Cannot open database ${file}: the file is truncated`));
    });

    // DuckDB itself opens this one and would serve until a query reached the lost block.
    await t.step("its last block lost", async () => {
      const { dir, file } = await damaged("last-block", (b) => b.subarray(0, b.length - 262144));
      await assertRefused(
        dir,
        new RegExp(`^Cannot open database ${file}: the file is truncated \\(\\d+ bytes, too few`),
      );
    });
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

onDuckDB.test("start-up refuses a file that is not a DuckDB database with one line, leaving it untouched", async (t) => {
  const parent = await Deno.makeTempDir({ prefix: "startup-test-" });
  try {
    await t.step("a CSV file", async () => {
      const dir = await dataDirWith(parent, "csv", new TextEncoder().encode("id,name\n1,Ada\n"));
      await assertRefused(
        dir,
        new RegExp(`: it is not a DuckDB database file$`, "m"),
      );
    });

    // Refused rather than taken as new: an empty file is what a failed copy or restore leaves.
    await t.step("an empty file", async () => {
      const dir = await dataDirWith(parent, "empty", new Uint8Array());
      await assertRefused(
        dir,
        new RegExp(
          `^Cannot open database ${
            quoted(`${dir}/tables.duckdb`)
          }: the file is empty \\(remove it to start a new database\\)$`,
          "m",
        ),
      );
    });

    await t.step("a SQLite database", async () => {
      const dir = `${parent}/sqlite`;
      await Deno.mkdir(dir);
      const file = `${dir}/tables.duckdb`;
      const made = await new Deno.Command("python3", {
        args: [
          "-c",
          "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);" +
          " c.execute('CREATE TABLE t (a)'); c.commit(); c.close()",
          file,
        ],
      }).output().catch(() => undefined);
      if (!made?.success) {
        console.log("skipped: python3 with sqlite3 is not available to make a SQLite file");
        return;
      }
      await assertRefused(dir, /: it is a SQLite database, not a DuckDB one$/m);
    });
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

/**
 * Makes `path` unwritable for the service and returns how to undo it, or why that cannot be
 * done here. chmod, and where that does not bind (root writes through any mode), `chattr +i`:
 * ext4 and most local file systems take it, a container without CAP_LINUX_IMMUTABLE does not.
 */
async function makeReadOnly(path: string): Promise<(() => Promise<void>) | string> {
  const { isDirectory, mode } = await Deno.stat(path);
  const writable = () =>
    (isDirectory
      ? Deno.writeTextFile(`${path}/.probe`, "").then(() => Deno.remove(`${path}/.probe`))
      : Deno.open(path, { write: true }).then((file) => file.close()))
      .then(() => true, () => false);
  const chmod = () => Deno.chmod(path, mode! & 0o777);
  await Deno.chmod(path, isDirectory ? 0o555 : 0o444);
  if (!await writable()) return chmod;
  await chmod();
  const chattr = (flag: string) =>
    new Deno.Command("chattr", { args: [flag, path], stderr: "piped" }).output();
  const set = await chattr("+i").catch((error: Error) => error);
  if (set instanceof Error || !set.success) {
    const why = set instanceof Error ? set.message : new TextDecoder().decode(set.stderr);
    return `chmod does not stop this user, and chattr +i failed: ${why.trim()}`;
  }
  const undo = async () => void await chattr("-i");
  if (!await writable()) return undo;
  await undo();
  return "neither chmod nor chattr +i stops this user writing";
}

onDuckDB.test("start-up refuses a data directory or a database file it cannot write", async (t) => {
  const original = await realDatabase();
  const parent = await Deno.makeTempDir({ prefix: "startup-test-" });
  try {
    await t.step("a data directory without write permission", async () => {
      const dir = await dataDirWith(parent, "read-only-dir", original);
      const undo = await makeReadOnly(dir);
      if (typeof undo === "string") {
        console.log(`skipped: cannot make a read-only directory here (${undo})`);
        return;
      }
      try {
        const line = await assertRefused(
          dir,
          new RegExp(`^DATA_DIR ${quoted(dir)} is not a writable directory: \\w`),
        );
        assert.doesNotMatch(line, /os error|\.write-probe/);
      } finally {
        await undo();
      }
    });

    await t.step("a read-only database file in a writable directory", async () => {
      const dir = await dataDirWith(parent, "read-only-file", original);
      const undo = await makeReadOnly(`${dir}/tables.duckdb`);
      if (typeof undo === "string") {
        console.log(`skipped: cannot make a read-only file here (${undo})`);
        return;
      }
      try {
        await assertRefused(
          dir,
          new RegExp(
            `^Cannot open database ${
              quoted(`${dir}/tables.duckdb`)
            }: it cannot be opened for reading and writing \\((Operation not permitted|Permission denied)\\)$`,
            "m",
          ),
        );
      } finally {
        await undo();
      }
    });
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

onDuckDB.test("start-up on a port in use exits with one line, before it opens the database", async (t) => {
  const original = await realDatabase();
  const parent = await Deno.makeTempDir({ prefix: "startup-test-" });
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  const inUse = new RegExp(
    `^Cannot listen on 127\\.0\\.0\\.1:${port}: Address already in use$`,
    "m",
  );
  try {
    await t.step("a database is left untouched", async () => {
      const dir = await dataDirWith(parent, "port", original);
      await assertRefused(dir, inUse, { PORT: String(port) });
    });

    // The port is bound first: the database file is not even opened, so its faults go unseen.
    await t.step("the port is named even when the database file would be refused", async () => {
      const dir = await dataDirWith(parent, "port-csv", new TextEncoder().encode("id\n1\n"));
      await assertRefused(dir, inUse, { PORT: String(port) });
    });
  } finally {
    listener.close();
    await Deno.remove(parent, { recursive: true });
  }
});

onDuckDB.test("start-up refuses a database another instance holds, and leaves that instance alone", async () => {
  const original = await realDatabase();
  const parent = await Deno.makeTempDir({ prefix: "startup-test-" });
  const dir = await dataDirWith(parent, "locked", original);
  // Another process: one that read the file (as assertRefused does) would drop its own lock.
  const first = await TestServer.spawn({}, dir);
  try {
    // An upload in flight of the running instance: the second start must not clear it.
    await Deno.writeTextFile(`${dir}/spool/upload-in-flight`, "rows");
    await assertRefused(
      dir,
      new RegExp(
        `^Cannot open database ${
          quoted(`${dir}/tables.duckdb`)
        }: another process \\(PID ${first.pid}\\) is using it$`,
        "m",
      ),
    );
    assert.equal(await Deno.readTextFile(`${dir}/spool/upload-in-flight`), "rows");
    const { tables } = ok(await first.request("GET", "table"));
    assert.deepEqual(tables.map((table: { name: string }) => table.name), ["things"]);
  } finally {
    await first.dispose();
    await Deno.remove(parent, { recursive: true }).catch(() => {});
  }
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
