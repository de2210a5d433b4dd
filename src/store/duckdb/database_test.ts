import assert from "node:assert/strict";
import { DuckDBInstance } from "@duckdb/node-api";
import { ApiError } from "../../errors.ts";
import { Database, type Lines, type Session } from "./database.ts";
import { fill, unmountable, withTmpfs } from "../../../tests/helpers/tmpfs.ts";

/** An in-memory Database of its own for `work`, closed and its directory removed after. */
async function withDatabase(
  work: (db: Database) => Promise<void>,
  memoryBytes?: number,
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const db = await Database.open({ path: ":memory:", spoolDir: dir, tempDir: dir, memoryBytes });
  try {
    await work(db);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Database.open() opens a file whose free tail a checkpoint cut off", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const path = `${dir}/t.duckdb`;
  try {
    // A big table at the end of the file, dropped: the checkpoint shortens the file while
    // the header keeps counting the freed blocks.
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    for (
      const sql of [
        "CREATE TABLE a AS SELECT 1 AS x",
        "CHECKPOINT",
        "CREATE TABLE b AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(2000000)",
        "CHECKPOINT",
      ]
    ) await connection.run(sql);
    const grown = (await Deno.stat(path)).size;
    await connection.run("DROP TABLE b");
    await connection.run("CHECKPOINT");
    connection.closeSync();
    instance.closeSync();
    const shrunk = (await Deno.stat(path)).size;
    assert.ok(shrunk < grown / 10, `the file did not shrink (${grown} → ${shrunk})`);

    const db = await Database.open({ path, spoolDir: dir, tempDir: dir });
    try {
      const rows = await db.withSession((s) => s.rows("SELECT count(*) AS n FROM a"));
      assert.equal(rows[0]?.n, 1n);
    } finally {
      await db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Database.open() runs DuckDB on the threads it is given, else one per core", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    for (const threads of [1, 3, undefined]) {
      const db = await Database.open({ path: ":memory:", spoolDir: dir, tempDir: dir, threads });
      try {
        const [row] = await db.withSession((s) =>
          s.rows("SELECT current_setting('threads')::INTEGER AS n")
        );
        assert.equal(row?.n, threads ?? navigator.hardwareConcurrency);
      } finally {
        await db.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Database.openTransactions counts transactions until they commit or roll back", async () => {
  await withDatabase(async (db) => {
    assert.equal(db.openTransactions, 0);
    const inside = await db.transaction(async (outer) => {
      await outer.run("CREATE TABLE t (x INTEGER)");
      const nested = await db.transaction(() => Promise.resolve(db.openTransactions));
      return [db.openTransactions, nested];
    });
    assert.deepEqual(inside, [1, 2]);
    await assert.rejects(db.transaction(async (session) => {
      assert.equal(db.openTransactions, 1);
      await session.run("INSERT INTO t VALUES ('not a number')");
    }));
    assert.equal(db.openTransactions, 0);
  });
});

Deno.test("Session: DuckDB out of memory is a 503 that says so", async () => {
  await withDatabase(async (db) => {
    // One list of 100 million numbers cannot spill: it must fit in memory whole.
    const failed = await db.withSession((s) => s.rows("SELECT list(range) FROM range(100000000)"))
      .then(() => undefined, (error) => error);
    assert.ok(failed instanceof ApiError, String(failed));
    assert.equal(failed.status, 503);
    assert.match(failed.message, /ran out of memory/);
    assert.equal(failed.headers["retry-after"], "1");
    // The database goes on.
    assert.deepEqual(await db.withSession((s) => s.rows("SELECT 1 AS one")), [{ one: 1 }]);
  }, 96 * 1024 ** 2);
});

Deno.test("Database.withSession() never pools a connection left inside a transaction", async () => {
  const count = (s: Session) => s.rows("SELECT count(*) AS n FROM t").then((r) => r[0]?.n);
  await withDatabase(async (db) => {
    await db.withSession((s) => s.run("CREATE TABLE t (x INTEGER)"));
    await assert.rejects(
      db.withSession(async (s) => {
        await s.run("BEGIN TRANSACTION");
        await s.run("INSERT INTO t VALUES (1)");
      }),
      /ended inside the transaction it began; it was rolled back/,
    );
    // The next session's statements commit by themselves: another connection sees them.
    const seen = await db.withSession(async (s) => {
      await s.run("INSERT INTO t VALUES (2)");
      return await db.withSession(count);
    });
    assert.equal(seen, 1n);
    // A transaction ended inside the session is fine.
    await db.withSession(async (s) => {
      await s.run("BEGIN TRANSACTION");
      await s.run("INSERT INTO t VALUES (3)");
      await s.run("COMMIT");
    });
    assert.equal(await db.withSession(count), 2n);
  });
});

Deno.test("Database.streamLines() rejects with 503 when the statement runs out of memory before its first rows", async () => {
  await withDatabase(async (db) => {
    // One list of 100 million values: a single value DuckDB cannot spill.
    const failed = await db.streamLines(
      linesOf("h", "SELECT list(range)::VARCHAR FROM range(100000000)"),
    )
      .then(() => undefined, (error) => error);
    assert.ok(failed instanceof ApiError, `not an ApiError: ${failed}`);
    assert.equal(failed.status, 503);
    assert.equal(db.openTransactions, 0);
    // The connection went back; the next export runs whole.
    const stream = await db.streamLines(linesOf("n", "SELECT range::VARCHAR FROM range(3)"));
    const lines = await new Response(stream).text();
    assert.equal(lines, "n\n0\n1\n2\n");
    assert.equal(db.openTransactions, 0);
  }, 32 * 1024 ** 2);
});

Deno.test("Database.streamLines() runs the statement in the snapshot its prepare read in", async () => {
  await withDatabase(async (db) => {
    await db.withSession((s) => s.run("CREATE TABLE t AS SELECT range AS a FROM range(3)"));
    const stream = await db.streamLines(async (session) => {
      const [row] = await session.rows("SELECT count(*) AS n FROM t");
      // Committed after the snapshot began: the statement still finds the table it described.
      await db.withSession((s) => s.run("ALTER TABLE t RENAME COLUMN a TO b"));
      await db.withSession((s) => s.run("DROP TABLE t"));
      return { first: `rows ${row!.n}\n`, sql: "SELECT a::VARCHAR FROM t" };
    });
    assert.equal(await new Response(stream).text(), "rows 3\n0\n1\n2\n");
    assert.equal(db.openTransactions, 0);
  });
});

Deno.test("Database.streamLines() lets go of its transaction when the reader cancels", async () => {
  await withDatabase(async (db) => {
    const stream = await db.streamLines(linesOf("n", "SELECT range::VARCHAR FROM range(100000)"));
    assert.equal(db.openTransactions, 1);
    await stream.cancel();
    assert.equal(db.openTransactions, 0);
  });
});

/** A `prepare` for {@link Database.streamLines} that reads nothing: `first` as a line. */
function linesOf(first: string, sql: string): () => Promise<Lines> {
  return () => Promise.resolve({ first: `${first}\n`, sql });
}

Deno.test({
  name: "Database reopens itself after a failed checkpoint, and usable() is false while it " +
    `cannot${unmountable ? ` (ignored: ${unmountable})` : ""}`,
  ignore: unmountable !== undefined,
  fn: () =>
    withTmpfs(16, async (dir) => {
      const path = `${dir}/t.duckdb`;
      const db = await Database.open({ path, spoolDir: dir, tempDir: dir });
      try {
        await db.withSession(async (s) => {
          await s.run("CREATE TABLE t AS SELECT range AS i FROM range(100000)");
          await fill(`${dir}/filler`);
          // The checkpoint cannot write the table to the file: DuckDB invalidates the instance.
          await assert.rejects(s.run("CHECKPOINT"));
          // Still holding the failed instance: its file turns unopenable before the reopen.
          await Deno.rename(path, `${dir}/kept`);
          await Deno.remove(`${dir}/filler`);
          await Deno.writeFile(path, new TextEncoder().encode("not a database"));
        });
        assert.equal(await db.usable(), false);
        await assert.rejects(
          db.withSession((s) => s.rows("SELECT 1")),
          (error) => error instanceof ApiError && error.status === 503,
        );

        await Deno.rename(`${dir}/kept`, path);
        assert.equal(await db.usable(), true);
        const rows = await db.withSession((s) => s.rows("SELECT count(*) AS n FROM t"));
        assert.equal(rows[0]?.n, 100000n);
      } finally {
        await db.close();
      }
    }),
});

Deno.test({
  name: "Database breaks off an export its reader stalls when the instance fails, and reopens " +
    `without waiting for that reader${unmountable ? ` (ignored: ${unmountable})` : ""}`,
  ignore: unmountable !== undefined,
  fn: () =>
    withTmpfs(16, async (dir) => {
      const db = await Database.open({ path: `${dir}/t.duckdb`, spoolDir: dir, tempDir: dir });
      await db.withSession((s) => s.run("CREATE TABLE t AS SELECT range AS i FROM range(100000)"));
      // Read up to its first rows, then left: a client that stopped reading.
      const stream = await db.streamLines(linesOf("i", "SELECT i::VARCHAR FROM t"));
      const reader = stream.getReader();
      try {
        await reader.read();
        assert.equal(db.activeSessions, 1);

        await fill(`${dir}/filler`);
        await assert.rejects(
          db.withSession((s) => s.run("CREATE TABLE u AS SELECT range AS i FROM range(100000)")),
        );
        await assert.rejects(db.withSession((s) => s.run("CHECKPOINT")));
        await Deno.remove(`${dir}/filler`);

        // The stalled export no longer holds the failed instance: work goes on without its reader.
        assert.equal(db.activeSessions, 0);
        assert.equal(db.openTransactions, 0);
        assert.equal(await db.usable(), true);
        const rows = await db.withSession((s) => s.rows("SELECT count(*) AS n FROM t"));
        assert.equal(rows[0]?.n, 100000n);
        await assert.rejects(
          async () => {
            while (!(await reader.read()).done);
          },
          (error) => error instanceof ApiError && error.status === 507,
        );
      } finally {
        await reader.cancel().catch(() => {});
        await db.close();
      }
    }),
});

Deno.test({
  name: "Database.close() right after a checkpoint failed on a full disk closes the file, with " +
    `no reopen going on behind it${unmountable ? ` (ignored: ${unmountable})` : ""}`,
  ignore: unmountable !== undefined,
  fn: () =>
    withTmpfs(16, async (dir) => {
      const db = await Database.open({ path: `${dir}/t.duckdb`, spoolDir: dir, tempDir: dir });
      await db.withSession((s) => s.run("CREATE TABLE t AS SELECT range AS i FROM range(100000)"));
      await fill(`${dir}/filler`);
      // The failed checkpoint's session ends, which begins the reopen; the close meets it, and
      // its own checkpoint fails too (the log keeps every commit). Before, a reopen went on
      // behind the close: the process crashed, or the file stayed open and the unmount failed.
      await assert.rejects(db.withSession((s) => s.run("CHECKPOINT")));
      await assert.rejects(
        db.close(),
        (error) => error instanceof ApiError && error.status === 507,
      );
    }),
});

Deno.test({
  name: "Session.changes() of a statement saved before the checkpoint after it failed says it " +
    `was saved, not that nothing changed${unmountable ? ` (ignored: ${unmountable})` : ""}`,
  ignore: unmountable !== undefined,
  fn: () =>
    withTmpfs(64, async (dir) => {
      // Room for DuckDB's log to reach the 16 MB that starts a checkpoint, not for the checkpoint.
      await fill(`${dir}/filler`, 40 << 20);
      const db = await Database.open({ path: `${dir}/t.duckdb`, spoolDir: dir, tempDir: dir });
      try {
        await db.withSession((s) => s.run("CREATE TABLE t (i BIGINT, s VARCHAR)"));
        let inserted = 0;
        let failure: unknown;
        while (failure === undefined) {
          await db.withSession((s) =>
            s.changes(
              `INSERT INTO t SELECT range, repeat(md5((range + ${inserted})::VARCHAR), 4)
               FROM range(2000)`,
            )
          ).then((changed) => inserted += changed, (error) => failure = error);
        }
        assert.ok(failure instanceof ApiError, String(failure));
        assert.equal(failure.status, 503);
        assert.match(failure.message, /^The change was saved/);

        await Deno.remove(`${dir}/filler`);
        const rows = await db.withSession((s) => s.rows("SELECT count(*) AS n FROM t"));
        assert.equal(rows[0]?.n, BigInt(inserted + 2000));
      } finally {
        await Deno.remove(`${dir}/filler`).catch(() => {});
        await db.close();
      }
    }),
});

Deno.test("Database answers a commit short of memory for a wide table's blocks with 503, not 500", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const db = await Database.open({
    path: `${dir}/t.duckdb`,
    spoolDir: dir,
    tempDir: dir,
    memoryBytes: 96 * 1024 * 1024,
  });
  try {
    // Appending to a saved table holds a block of each column: 600 columns of 256 KiB blocks
    // are more than 96 MiB, and DuckDB says so as a failed commit, not "Out of Memory".
    const columns = Array.from({ length: 600 }, (_, i) => `c${i}`);
    const values = `(${columns.map((_, i) => i).join(", ")})`;
    await db.withSession(async (s) => {
      await s.run(`CREATE TABLE t (${columns.map((c) => `${c} BIGINT`).join(", ")})`);
      await s.run(`INSERT INTO t VALUES ${values}`);
      await s.run("CHECKPOINT");
    });
    const failure = await db.withSession((s) => s.run(`INSERT INTO t VALUES ${values}`)).then(
      () => undefined,
      (error) => error,
    );
    assert.ok(failure instanceof ApiError, `not an ApiError: ${failure}`);
    assert.equal(failure.status, 503);
    assert.match(failure.message, /ran out of memory/);
  } finally {
    await db.close().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});
