import assert from "node:assert/strict";
import { freshDatabase, postgresTest } from "../../../tests/helpers/postgres.ts";
import { Database } from "./database.ts";
import { type LockRequest, schemaLock, tableLock, takeLocks, templateLock } from "./locks.ts";

await postgresTest("takeLocks() on PostgreSQL 15", async (t, server) => {
  const database = await Database.open({ url: await freshDatabase(server) });
  /** The advisory locks this transaction holds, as "ExclusiveLock" or "ShareLock" counts. */
  const held = (requests: readonly LockRequest[]) =>
    database.transaction(async (session) => {
      await takeLocks(session, requests);
      const rows = await session.rows(
        `SELECT mode, count(*)::integer AS n FROM pg_locks
         WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
         GROUP BY mode ORDER BY mode`,
      );
      return Object.fromEntries(rows.map((r) => [r.mode, r.n]));
    });
  try {
    await t.step("a schema's and a table's keys, as a change takes them, twice", async () => {
      const requests = [
        schemaLock("public", "shared"),
        tableLock({ schema: "public", name: "t" }, "exclusive"),
      ];
      // The second time on a connection the statement is the prepared one.
      for (let i = 0; i < 2; i++) {
        assert.deepEqual(await held(requests), { ExclusiveLock: 1, ShareLock: 1 });
      }
    });
    await t.step(
      "several keys, a key asked for in both modes taken once, exclusively",
      async () => {
        const tables = Array.from(
          { length: 6 },
          (_, i) => tableLock({ schema: "s", name: `t${i}` }, "shared"),
        );
        const requests = [
          schemaLock("s", "shared"),
          ...tables,
          tableLock({ schema: "s", name: "t0" }, "exclusive"),
          templateLock("x"),
        ];
        assert.deepEqual(await held(requests), { ExclusiveLock: 2, ShareLock: 6 });
      },
    );
    await t.step(
      "sequences longer than a statement's name can spell, alike at their start, each its own",
      async () => {
        const tables = (n: number) =>
          Array.from({ length: n }, (_, i) => tableLock({ schema: "s", name: `u${i}` }, "shared"));
        for (const n of [60, 61, 60]) {
          const requests = [tableLock({ schema: "r", name: "a" }, "exclusive"), ...tables(n)];
          assert.deepEqual(await held(requests), { ExclusiveLock: 1, ShareLock: n });
        }
      },
    );
  } finally {
    await database.close();
  }
});
