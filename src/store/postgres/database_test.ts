import assert from "node:assert/strict";
import { ApiError } from "../../errors.ts";
import { freshDatabase, postgresTest } from "../../../tests/helpers/postgres.ts";
import { Database } from "./database.ts";
import { engineError } from "./engine_errors.ts";

/** Asserts that `promise` rejects with an ApiError of `status` and `type`. */
async function rejectsWith(promise: Promise<unknown>, status: number, type: string) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof ApiError, String(error));
    assert.equal(error.status, status, error.message);
    assert.equal(error.type, type, error.message);
    return true;
  });
}

Deno.test("engineError() answers deadlocks and serialization failures 409, other errors nothing", () => {
  const coded = (code: string) => Object.assign(new Error("boom"), { code });
  assert.equal(engineError(coded("40P01"))?.status, 409);
  assert.equal(engineError(coded("40001"))?.status, 409);
  assert.equal(engineError(coded("57P01"))?.status, 503);
  assert.equal(engineError(coded("08006"))?.status, 503);
  assert.equal(engineError(coded("42601")), undefined);
  assert.equal(engineError(new Error("Connection terminated unexpectedly"))?.status, 503);
  assert.equal(engineError("not an error"), undefined);
});

await postgresTest(`Database on PostgreSQL 15`, async (t, server) => {
  const database = await Database.open({ url: await freshDatabase(server) });
  const run = (sql: string) => database.withSession((s) => s.run(sql));
  try {
    await run(`CREATE TABLE p (id integer PRIMARY KEY, n smallint NOT NULL DEFAULT 0,
        d date, t timestamp)`);
    await run("CREATE TABLE c (id integer PRIMARY KEY, p integer REFERENCES p (id))");
    await run("INSERT INTO p (id) VALUES (1)");
    await run("INSERT INTO c VALUES (1, 1)");

    await t.step(
      "withSession() answers the SQLSTATEs a client causes with the contract's statuses",
      async () => {
        await rejectsWith(run("INSERT INTO p (id) VALUES (1)"), 409, "conflict");
        await rejectsWith(run("INSERT INTO c VALUES (2, 99)"), 422, "invalid_data");
        await rejectsWith(run("DELETE FROM p"), 409, "conflict");
        await rejectsWith(run("INSERT INTO p (id, n) VALUES (2, NULL)"), 422, "invalid_data");
        await rejectsWith(run("INSERT INTO p (id, n) VALUES (2, 'x')"), 422, "invalid_data");
        await rejectsWith(run("INSERT INTO p (id, n) VALUES (2, 70000)"), 422, "invalid_data");
        await rejectsWith(
          run("INSERT INTO p (id, d) VALUES (2, '2026-02-30')"),
          422,
          "invalid_data",
        );
        await rejectsWith(run("INSERT INTO p (id, t) VALUES (2, 'soon')"), 422, "invalid_data");
        await rejectsWith(run("SELECT * FROM nowhere"), 404, "not_found");
        await assert.rejects(run("SELEC 1"), (error) => !(error instanceof ApiError));
      },
    );

    await t.step("transaction() commits what returns and rolls back what throws", async () => {
      await database.transaction((s) => s.run("INSERT INTO p (id) VALUES (10)"));
      await assert.rejects(
        database.transaction(async (s) => {
          await s.run("INSERT INTO p (id) VALUES (11)");
          assert.equal(database.openTransactions, 1);
          throw new Error("changed my mind");
        }),
        /changed my mind/,
      );
      assert.equal(database.openTransactions, 0);
      const rows = await database.withSession((s) =>
        s.rows("SELECT id FROM p WHERE id >= 10 ORDER BY id")
      );
      assert.deepEqual(rows, [{ id: 10 }]);
    });

    await t.step("a session keeps working after an error in another transaction", async () => {
      await rejectsWith(
        database.transaction((s) => s.run("INSERT INTO p (id) VALUES (1)")),
        409,
        "conflict",
      );
      assert.equal(await database.usable(), true);
    });

    await t.step("a 4xx the work throws keeps its connection in the pool", async () => {
      // Opening a connection costs several times a request that is refused: a client asking
      // for a missing table must not make the pool reconnect each time.
      const pid = () =>
        database.withSession(async (s) => (await s.rows("SELECT pg_backend_pid() AS p"))[0]!.p);
      const before = await pid();
      await rejectsWith(
        database.transaction(async (s) => {
          await s.run("INSERT INTO p (id) VALUES (13)");
          throw ApiError.notFound('Table "nope" does not exist');
        }),
        404,
        "not_found",
      );
      assert.equal(await pid(), before);
      const rows = await database.withSession((s) => s.rows("SELECT id FROM p WHERE id = 13"));
      assert.deepEqual(rows, []);
    });

    await t.step(
      "a connection given back inside a transaction is thrown away, its changes rolled back",
      async () => {
        // Work that opens a transaction and never ends it (a ROLLBACK that failed, a stream
        // cut short): reused, the connection would hand its changes and locks to the next
        // unit of work, whose COMMIT would make them permanent.
        await database.withSession(async (s) => {
          await s.run("BEGIN");
          await s.run("DELETE FROM c");
        });
        await database.withSession((s) => s.run("BEGIN"));
        await database.withSession(async (s) => {
          await s.run("BEGIN");
          await s.run("SELECT 1/0").catch(() => {});
        });
        const children = () => database.withSession((s) => s.rows("SELECT id FROM c"));
        assert.deepEqual(await children(), [{ id: 1 }]);
        // A later commit on the pool's connections does not commit the abandoned delete.
        await database.transaction((s) => s.run("INSERT INTO p (id) VALUES (12)"));
        assert.deepEqual(await children(), [{ id: 1 }]);
      },
    );

    await t.step(
      "a wait for a connection that outlasts connectionWaitMs is 503 with Retry-After",
      async () => {
        // The one connection is held for the whole wait, so the wait ends past the limit
        // whatever it is; the limit covers connecting too, which a busy machine slows past
        // 100 ms, so it is generous.
        const one = await Database.open({
          url: await freshDatabase(server),
          maxConnections: 1,
          connectionWaitMs: 3000,
        });
        let release = () => {};
        const held = one.withSession(() => new Promise<void>((r) => release = r));
        try {
          await assert.rejects(one.withSession((s) => s.run("SELECT 1")), (error) => {
            assert.ok(error instanceof ApiError, String(error));
            assert.equal(error.status, 503, error.message);
            assert.equal(error.headers["retry-after"], "1");
            return true;
          });
        } finally {
          release();
          await held;
          await one.close();
        }
      },
    );

    await t.step(
      "aside() runs apart from the pool, gives up a lock not had in time, and closes with it",
      async () => {
        const url = await freshDatabase(server);
        const one = await Database.open({ url, maxConnections: 1 });
        let closed = false;
        try {
          await one.withSession((s) => s.run("CREATE TABLE t (n integer)"));
          await one.transaction(async (session) => {
            await session.run("LOCK TABLE t IN ACCESS EXCLUSIVE MODE");
            // The pool's one connection is this transaction's: the call goes on another,
            // and waits 50 ms for the lock it holds.
            await rejectsWith(one.aside(["SELECT count(*) FROM t"], 50), 409, "conflict");
            assert.deepEqual(await one.aside(["SELECT 1 AS one", "SELECT 2 AS two"], 50), [
              [{ one: 1 }],
              [{ two: 2 }],
            ]);
          });
          // Its own transaction: the SET LOCALs before the statements end with it.
          assert.deepEqual(await one.aside(["SHOW lock_timeout"], 50), [[{
            lock_timeout: "50ms",
          }]]);
          await one.close();
          closed = true;
          await assert.rejects(one.aside(["SELECT 1"], 50), /closed/);
          const name = new URL(url).pathname.slice(1);
          const [left] = await database.withSession((s) =>
            s.rows(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [name])
          );
          assert.deepEqual(left, { n: 0 }, "no connection outlives close()");
        } finally {
          if (!closed) await one.close();
        }
      },
    );
  } finally {
    await database.close();
  }
});

Deno.test("Database.open() is 503 when nothing listens at the address", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  await rejectsWith(
    Database.open({ url: `postgres://nobody@127.0.0.1:${port}/none` }),
    503,
    "unavailable",
  );
});
