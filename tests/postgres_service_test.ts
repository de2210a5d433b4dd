import assert from "node:assert/strict";
import { postgresEnv, postgresTest } from "./helpers/postgres.ts";
import { errorOf, ok, TestServer } from "./helpers/server.ts";
import pg from "pg";

const CUSTOMERS = {
  columns: [{ name: "id", type: "integer" }, { name: "name", type: "varchar" }],
  constraints: { primary_key: { columns: ["id"] } },
};

const PARTS = {
  columns: [{ name: "id", type: "integer" }, { name: "maker", type: "integer" }],
  constraints: {
    primary_key: { columns: ["id"] },
    foreign_keys: [{ column: "maker", reference_table: "makers", reference_column: "id" }],
  },
};

await postgresTest(
  `The service with DATABASE_URL keeps its tables in PostgreSQL`,
  async (t, database) => {
    const env = await postgresEnv(database);
    const first = await TestServer.start(env);
    const second = await TestServer.start(env);
    try {
      await t.step("it is ready, and reports the PostgreSQL store's memory", async () => {
        assert.equal((await first.request("GET", "/readyz", { token: null })).status, 200);
        const metrics = await first.request("GET", "/metrics");
        assert.match(metrics.text, /use="shared_buffers"/);
      });

      await t.step("a table created through one instance is read through another", async () => {
        ok(await first.request("POST", "schema/Sales"));
        const table = {
          columns: [{ name: "id", type: "serial" }, { name: "name", type: "varchar(20)" }],
          constraints: { primary_key: { columns: ["id"] } },
        };
        ok(await first.request("POST", "table/Orders?schema=sales", { body: { table } }));
        const { table: read } = ok(await second.request("GET", "table/orders?schema=SALES"));
        assert.deepEqual(read.columns.map((c: { type: string }) => c.type), [
          "integer",
          "character varying(20)",
        ]);
        errorOf(
          await second.request("POST", "table/ORDERS?schema=Sales", { body: { table } }),
          409,
        );
      });

      await t.step("rows loaded through one instance export through the other", async () => {
        ok(
          await first.request("POST", "table/Orders/records?schema=Sales", {
            body: [{ id: 2, name: 'b,"quoted"' }, { id: 1, name: null }],
          }),
        );
        const csv = await second.request("GET", "table/orders/records/csv?schema=SALES&order=id");
        assert.equal(csv.status, 200);
        assert.equal(csv.text, 'id,name\n1,\n2,"b,""quoted"""\n');
        const ndjson = await second.request(
          "GET",
          "table/orders/records/ndjson?schema=SALES&id=gt.1",
        );
        assert.equal(ndjson.text, '{"id":2,"name":"b,\\"quoted\\""}\n');
        errorOf(await second.request("GET", "table/orders/records/csv?schema=SALES&id=eq.x"), 400);
      });
      await t.step(
        "a keyed write is answered once, and its retry on the other instance replays it",
        async () => {
          const headers = { "idempotency-key": "load-1" };
          const body = [{ id: 10, name: "keyed" }];
          const path = "table/Orders/records?schema=Sales";
          const answer = await first.request("POST", path, { body, headers });
          assert.equal(answer.status, 200, answer.text);
          const again = await second.request("POST", path, { body, headers });
          assert.equal(again.status, 200, again.text);
          assert.equal(again.headers.get("idempotent-replayed"), "true");
          assert.deepEqual(again.body, answer.body);
          const rows = ok(
            await second.request("GET", "table/Orders/records?schema=Sales&id=eq.10"),
          );
          assert.equal(rows.total, 1);
        },
      );

      await t.step(
        "one keyed request sent to both instances at once runs once",
        async () => {
          // Each instance knows only its own running requests: the key is claimed in the
          // database, so the twin waits, then answers 409 in_use (or, later, the replay).
          ok(
            await first.request("POST", "table/twins", {
              body: { table: { columns: [{ name: "n", type: "integer" }] } },
            }),
          );
          for (
            const [i, [method, path, body]] of [
              ["POST", "table/twins/records", Array.from({ length: 2000 }, (_, n) => ({ n }))],
              ["POST", "schema/twin_schema", undefined],
              ["PATCH", "table/twins/records?n=lt.10", { n: -1 }],
            ].entries() as Iterable<[number, [string, string, unknown]]>
          ) {
            const headers = { "idempotency-key": `twin-${i}` };
            const answers = await Promise.all(
              [first, second].map((s) => s.request(method, path, { body, headers })),
            );
            const fresh = answers.filter((a) =>
              a.status === 200 && a.headers.get("idempotent-replayed") === null
            );
            assert.equal(fresh.length, 1, answers.map((a) => `${a.status} ${a.text}`).join("\n"));
            for (const answer of answers) {
              if (answer === fresh[0]) continue;
              const replayed = answer.status === 200 &&
                answer.headers.get("idempotent-replayed") === "true";
              assert.ok(
                replayed || errorOf(answer, 409).type === "idempotency_key_in_use",
                answer.text,
              );
            }
          }
          const { total } = ok(await first.request("GET", "table/twins/records?limit=0"));
          assert.equal(total, 2000);
        },
      );

      await t.step(
        "what one instance remembers of a table holds only until another changes it",
        async () => {
          // The first instance inserts into and reads both tables, so it knows their
          // descriptions; the second then changes them.
          ok(await first.request("POST", "table/makers", { body: { table: CUSTOMERS } }));
          ok(await first.request("POST", "table/parts", { body: { table: PARTS } }));
          let id = 1;
          const remembered = async () => {
            ok(await first.request("POST", "table/makers/records", { body: [{ id }] }));
            ok(await first.request("POST", "table/parts/records", { body: [{ id, maker: id }] }));
            ok(await first.request("GET", "table/makers/records?limit=1"));
            ok(await first.request("GET", "table/parts/records?limit=1"));
            id++;
          };
          await remembered();

          // A column added: the insert's answer and a page show it.
          const { table: makers } = ok(await second.request("GET", "table/makers"));
          ok(
            await second.request("PUT", "table/makers", {
              body: {
                table: { columns: [...makers.columns, { name: "city", type: "varchar" }] },
              },
            }),
          );
          const { table } = ok(
            await first.request("POST", "table/makers/records", { body: [{ id: 9, name: "b" }] }),
          );
          assert.deepEqual(table.columns.map((c: { name: string }) => c.name), [
            "id",
            "name",
            "city",
          ]);
          const page = ok(await first.request("GET", "table/makers/records?order=id"));
          assert.deepEqual(page.records, [
            { id: 1, name: null, city: null },
            { id: 9, name: "b", city: null },
          ]);

          // The table a foreign key names renamed: the referencing table's answer names it anew.
          await remembered();
          ok(await second.request("PUT", "table/makers", { body: { table: { name: "firms" } } }));
          const { table: parts } = ok(
            await first.request("POST", "table/parts/records", { body: [{ id: 9, maker: 1 }] }),
          );
          assert.equal(parts.constraints.foreign_keys[0].reference_table, "firms");
          // The renamed table's old name names no table now, then the one made with it.
          errorOf(await first.request("POST", "table/makers/records", { body: [{ id: 20 }] }), 404);
          ok(
            await second.request("POST", "table/makers", {
              body: { table: { columns: [{ name: "label", type: "text" }] } },
            }),
          );
          const made = ok(
            await first.request("POST", "table/makers/records", { body: [{ label: "m" }] }),
          );
          assert.deepEqual(made.table.columns.map((c: { name: string }) => c.name), ["label"]);

          // Dropped and made anew with other columns: the new table is the one written.
          ok(await second.request("DELETE", "table/parts"));
          ok(
            await second.request("POST", "table/parts", {
              body: { table: { columns: [{ name: "label", type: "text" }] } },
            }),
          );
          errorOf(
            await first.request("POST", "table/parts/records", { body: [{ id: 10, maker: 1 }] }),
            422,
          );
          ok(await first.request("POST", "table/parts/records", { body: [{ label: "x" }] }));
          const again = ok(await first.request("GET", "table/parts/records"));
          assert.deepEqual(again.records, [{ label: "x" }]);
        },
      );
    } finally {
      await second.dispose();
      await first.dispose();
    }
  },
);

await postgresTest(
  "DATABASE_POOL_SIZE bounds the connections one instance holds",
  async (_t, database) => {
    const env = await postgresEnv(database);
    const server = await TestServer.start({ ...env, DATABASE_POOL_SIZE: "2" });
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      const table = { columns: [{ name: "id", type: "integer" }] };
      ok(await server.request("POST", "table/t", { body: { table } }));
      // Many writes and reads at once: each waits for one of the two connections.
      const answers = await Promise.all(
        Array.from(
          { length: 16 },
          (_, i) =>
            i % 2
              ? server.request("POST", "table/t/records", { body: [{ id: i }] })
              : server.request("GET", "table/t/records?count=exact"),
        ),
      );
      for (const answer of answers) assert.equal(answer.status, 200, answer.text);
      // The pool keeps its connections open a while after use: they are counted now.
      const { rows } = await client.query(
        `SELECT count(*)::integer AS n FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'table-service'`,
      );
      assert.ok(rows[0].n >= 1 && rows[0].n <= 2, `${rows[0].n} connections`);
      assert.equal(ok(await server.request("GET", "table/t/records")).total, 8);
    } finally {
      await client.end();
      await server.dispose();
    }
  },
);
