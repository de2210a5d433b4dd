import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { TableDefinition, TableRef } from "../../catalog/model.ts";
import type { CsvSource, KeyedWrite, OnConflict } from "../store.ts";
import { rejectsWith } from "../../../tests/helpers/api_error.ts";
import { freshDatabase, postgresTest, type TestPostgres } from "../../../tests/helpers/postgres.ts";
import { rowsInParts } from "../../../tests/helpers/rows.ts";
import { Database } from "./database.ts";
import { openPostgresStore, type PostgresStore } from "./postgres_store.ts";

interface Bench {
  readonly store: PostgresStore;
  readonly db: Database;
  readonly dir: string;
}

async function withStore(server: TestPostgres, work: (bench: Bench) => Promise<void>) {
  const url = await freshDatabase(server);
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "pgload-" }));
  const store = await openPostgresStore({ url, spoolDir: dir });
  const db = await Database.open({ url, maxConnections: 2 });
  try {
    await work({ store, db, dir });
  } finally {
    await db.close();
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function bytes(text: string): () => ReadableStream<Uint8Array> {
  return () => new Blob([text]).stream();
}

/** Rows as the store receives a POST body of them. */
function arriving(dir: string, rows: unknown[]) {
  return rowsInParts(bytes(JSON.stringify(rows))(), dir);
}

function csv(text: string): CsvSource {
  return { stream: bytes(text) };
}

const T: TableRef = { schema: "public", name: "T" };

async function create(store: PostgresStore, definition: TableDefinition, ref = T) {
  await store.tables.create(planTable(ref, definition), { ifNotExists: false });
}

async function insert(bench: Bench, rows: unknown[], onConflict: OnConflict = "fail", ref = T) {
  return await bench.store.records.insert(ref, arriving(bench.dir, rows), onConflict);
}

async function rows(db: Database, sql: string) {
  return await db.withSession((s) => s.rows(sql));
}

const ALL_TYPES: TableDefinition = {
  columns: [
    { name: "id", type: "serial" },
    { name: "i", type: "integer" },
    { name: "b", type: "bigint" },
    { name: "d", type: "numeric(12,3)" },
    { name: "n", type: "numeric" },
    { name: "f", type: "double" },
    { name: "ok", type: "boolean" },
    { name: "day", type: "date" },
    { name: "at", type: "timestamptz" },
    { name: "local", type: "timestamp" },
    { name: "t", type: "text" },
    { name: "v", type: "varchar(10)" },
    { name: "j", type: "json" },
    { name: "jb", type: "jsonb" },
    { name: "tags", type: "varchar[]" },
    { name: "raw", type: "blob" },
    { name: "u", type: "uuid" },
  ],
  constraints: { primary_key: { columns: ["id"] } },
};

await postgresTest(`PostgreSQL loads`, async (t, server) => {
  await t.step("insertRecords() copies every contract type and fills serials", async () => {
    await withStore(server, async (bench) => {
      await create(bench.store, ALL_TYPES);
      const loaded = await insert(bench, [
        {
          i: 1,
          b: "9007199254740993",
          d: 12.345,
          n: "123456789012345678901234567890.5",
          f: 1.5,
          ok: true,
          day: "2024-02-29",
          at: "2024-01-01T12:00:00+02:00",
          local: "2024-01-01T12:00:00",
          t: 'quote " comma , newline \n tab \t ünïcödé 🎉',
          v: "",
          j: { a: [1, "x"], b: null },
          jb: [1, { c: "d" }],
          tags: ["a", 'b"c', null, "d,e"],
          raw: "AAEC/w==",
          u: "6c9f1a3e-8b0c-4c2a-9a57-0c4c5d7e8f90",
        },
        { i: null, t: null, ok: false },
      ]);
      assert.equal(loaded.inserted, 2);
      const [first, second] = await rows(
        bench.db,
        `SELECT id, i, b::text, d::text, n::text, f, ok, day::text,
               to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS at, local::text, t, v,
               j::text, jb::text, tags, encode(raw, 'hex') AS raw, u::text
             FROM "T" ORDER BY id`,
      );
      assert.deepEqual(first, {
        id: 1,
        i: 1,
        b: "9007199254740993",
        d: "12.345",
        n: "123456789012345678901234567890.5",
        f: 1.5,
        ok: true,
        day: "2024-02-29",
        at: "2024-01-01 10:00:00",
        local: "2024-01-01 12:00:00",
        t: 'quote " comma , newline \n tab \t ünïcödé 🎉',
        v: "",
        j: '{"a":[1,"x"],"b":null}',
        jb: '[1, {"c": "d"}]',
        tags: ["a", 'b"c', null, "d,e"],
        raw: "000102ff",
        u: "6c9f1a3e-8b0c-4c2a-9a57-0c4c5d7e8f90",
      });
      assert.equal(second!.id, 2);
      assert.equal(second!.i, null);
      assert.equal(second!.t, null);
      assert.equal(second!.ok, false);
    });
  });

  await t.step(
    "a value a column cannot take is 422 with row details, and nothing loads",
    async () => {
      await withStore(server, async (bench) => {
        await create(bench.store, {
          columns: [{ name: "id", type: "integer", is_nullable: false }, {
            name: "day",
            type: "date",
          }],
        });
        await insert(bench, [{ id: 1, day: "2024-01-01" }]);
        const error = await rejectsWith(
          insert(bench, [{ id: 2 }, { id: "x", day: "2024-01-01" }, { id: null, day: "nope" }]),
          422,
          /Rows do not fit table "T"/,
        );
        assert.deepEqual(error.details, [
          { row: 1, column: "id", message: 'Value "x" is not a valid integer' },
          { row: 2, column: "day", message: 'Value "nope" is not a valid date' },
          {
            row: 2,
            column: "id",
            message: "Column is NOT NULL but the value is null or missing",
          },
        ]);
        await rejectsWith(insert(bench, [{ id: 3, nope: 1 }]), 422, /nope/);
        const S = { schema: "public", name: "S" };
        await create(bench.store, { columns: [{ name: "s", type: "varchar(3)" }] }, S);
        // Only PostgreSQL checks a length; DuckDB ignores it.
        await rejectsWith(
          insert(bench, [{ s: "abc" }, { s: "abcd" }], "fail", S),
          422,
          /Rows do not fit table "S": value too long/,
        );
        assert.deepEqual(await rows(bench.db, `SELECT * FROM "S"`), []);
        assert.deepEqual(await rows(bench.db, `SELECT id FROM "T"`), [{ id: 1 }]);
      });
    },
  );

  await t.step("on_conflict fail, skip and update resolve keys as on DuckDB", async () => {
    await withStore(server, async (bench) => {
      await create(bench.store, {
        columns: [{ name: "id", type: "integer" }, { name: "name", type: "text" }],
        constraints: { primary_key: { columns: ["id"] } },
      });
      await insert(bench, [{ id: 1, name: "a" }, { id: 2, name: "b" }]);
      const exists = await rejectsWith(
        insert(bench, [{ id: 3, name: "c" }, { id: 1, name: "x" }]),
        409,
        /Rows conflict with a primary key or unique constraint of table "T": Key \(id\) already exists/,
      );
      assert.deepEqual(exists.details, [
        { row: 1, column: "id", message: 'Key (id) already exists (constraint "T_pkey")' },
      ]);
      const both = await rejectsWith(
        insert(bench, [{ id: 4 }, { id: 1 }, { id: 5 }, { id: 5 }]),
        409,
        /Key \(id\) already exists/,
      );
      assert.deepEqual(both.details?.map((d) => d.row), [1, 3]);
      const repeat = await rejectsWith(
        insert(bench, [{ id: 5 }, { id: 5 }]),
        409,
        /repeats an earlier row/,
      );
      assert.deepEqual(repeat.details?.map((d) => d.row), [1]);
      const skipped = await insert(bench, [{ id: 2, name: "B" }, { id: 3, name: "c" }, {
        id: 3,
        name: "C",
      }], "skip");
      assert.equal(skipped.inserted, 1);
      assert.equal(skipped.skipped, 2);
      const updated = await insert(bench, [{ id: 1, name: "A" }, { id: 4, name: "d" }, {
        id: 1,
        name: "AA",
      }], "update");
      assert.equal(updated.inserted, 1);
      assert.equal(updated.updated, 2);
      assert.deepEqual(await rows(bench.db, `SELECT id, name FROM "T" ORDER BY id`), [
        { id: 1, name: "AA" },
        { id: 2, name: "b" },
        { id: 3, name: "c" },
        { id: 4, name: "d" },
      ]);
    });
  });

  await t.step("on_conflict skip needs a key; foreign keys and keyed writes", async () => {
    await withStore(server, async (bench) => {
      await create(bench.store, { columns: [{ name: "x", type: "int" }] });
      await rejectsWith(insert(bench, [{ x: 1 }], "skip"), 422, /needs a primary key/);
      const P = { schema: "public", name: "P" };
      const C = { schema: "public", name: "C" };
      await create(bench.store, {
        columns: [{ name: "id", type: "int" }],
        constraints: { primary_key: { columns: ["id"] } },
      }, P);
      await create(bench.store, {
        columns: [{ name: "p", type: "int" }],
        constraints: {
          foreign_keys: [{ column: "p", reference_table: "P", reference_column: "id" }],
        },
      }, C);
      await insert(bench, [{ id: 1 }], "fail", P);
      await rejectsWith(
        insert(bench, [{ p: 1 }, { p: 2 }], "fail", C),
        422,
        /Rows violate a foreign key of table "C"/,
      );
      const keyed: KeyedWrite<{ table: unknown; inserted: number }> = {
        scope: "tester POST /x",
        key: "k1",
        fingerprint: () => "f".repeat(64),
        answer: (result) => ({ status: 201, body: { inserted: result.inserted } }),
        at: Date.now(),
        since: 0,
      };
      await bench.store.records.insert(C, arriving(bench.dir, [{ p: 1 }]), "fail", keyed);
      const kept = await bench.store.answers.find("tester POST /x", "k1", 0);
      assert.deepEqual(kept?.answer.body, { inserted: 1 });
    });
  });

  await t.step(
    "uploadCsv() with a definition checks its defaults on the connection of its lock, each probe apart",
    async () => {
      const url = await freshDatabase(server);
      const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "pgload-" }));
      // One connection: a probe on a second one would wait out the pool's 10 s and fail.
      const store = await openPostgresStore({ url, spoolDir: dir, maxConnections: 1 });
      try {
        const plan = (defaults: string[]) =>
          planTable(T, {
            columns: defaults.map((d, i) => ({ name: `c${i}`, type: "integer", default: d })),
          });
        const started = Date.now();
        const made = await store.records.uploadCsv(T, csv("c0,c1\n1,2\n"), {
          ifExists: "replace",
          plan: plan(["7", "8"]),
        });
        assert.equal(made.inserted, 1);
        // A default that is no integer fails its probe; the next probe still runs.
        const wrong = await rejectsWith(
          store.records.uploadCsv(T, csv("c0,c1\n1,2\n"), {
            ifExists: "replace",
            plan: plan(["'x'", "'y'"]),
          }),
          422,
        );
        assert.equal(wrong.details?.length, 2, JSON.stringify(wrong.details));
        assert.ok(Date.now() - started < 5_000, "a probe waited for a connection");
        await store.records.uploadCsv(T, csv("c0,c1\n1,2\n"), {
          ifExists: "replace",
          plan: plan(["1", "2"]),
        });
      } finally {
        await store.close();
        await Deno.remove(dir, { recursive: true });
      }
    },
  );

  await t.step("uploadCsv() infers types, and if_exists fail, append, replace", async () => {
    await withStore(server, async (bench) => {
      const text = 'id,name,price,day\n1,"a, b",1.5,2024-01-01\n2,"say ""hi""",2,2024-01-02\n';
      const made = await bench.store.records.uploadCsv(T, csv(text), { ifExists: "fail" });
      assert.equal(made.inserted, 2);
      assert.deepEqual(made.table.columns.map((c) => c.type), [
        "bigint",
        "character varying",
        "double precision",
        "date",
      ]);
      assert.deepEqual(await rows(bench.db, `SELECT name FROM "T" ORDER BY id`), [
        { name: "a, b" },
        { name: 'say "hi"' },
      ]);
      await rejectsWith(
        bench.store.records.uploadCsv(T, csv(text), { ifExists: "fail" }),
        409,
        /already exists; use if_exists=replace or append/,
      );
      const appended = await bench.store.records.uploadCsv(T, csv(text), { ifExists: "append" });
      assert.equal(appended.inserted, 2);
      assert.equal((await rows(bench.db, `SELECT count(*)::int AS n FROM "T"`))[0]!.n, 4);
      // A failed append changes nothing.
      await rejectsWith(
        bench.store.records.uploadCsv(T, csv("id,name,price,day\n3,c,x,2024-01-01\n"), {
          ifExists: "append",
        }),
        422,
      );
      assert.equal((await rows(bench.db, `SELECT count(*)::int AS n FROM "T"`))[0]!.n, 4);
      const replaced = await bench.store.records.uploadCsv(T, csv("a\nx\n"), {
        ifExists: "replace",
      });
      assert.deepEqual(replaced.table.columns.map((c) => c.name), ["a"]);
      assert.deepEqual(await rows(bench.db, `SELECT a FROM "T"`), [{ a: "x" }]);
      // A failed replace leaves the old table.
      await rejectsWith(
        bench.store.records.upload(T, await arriving(bench.dir, [{ z: 1 }]).whole(), {
          ifExists: "replace",
          plan: planTable(T, { columns: [{ name: "z", type: "date" }] }),
        }),
        422,
      );
      assert.deepEqual(await rows(bench.db, `SELECT a FROM "T"`), [{ a: "x" }]);
    });
  });

  await t.step("uploadTable() infers JSON rows' types, nested objects as json", async () => {
    await withStore(server, async (bench) => {
      const source = await arriving(bench.dir, [
        { id: 1, at: "2024-01-01T00:00:00Z", tags: ["a"], meta: { k: 1 }, ok: true },
        { id: 2, at: null, tags: [], meta: null, ok: false },
      ]).whole();
      const made = await bench.store.records.upload(T, source, { ifExists: "fail" });
      assert.equal(made.inserted, 2);
      assert.deepEqual(
        made.table.columns.map((c) => `${c.name} ${c.type}`),
        [
          "id bigint",
          "at timestamp without time zone",
          "tags character varying[]",
          "meta json",
          "ok boolean",
        ],
      );
      assert.deepEqual(
        await rows(bench.db, `SELECT meta::text, tags FROM "T" ORDER BY id`),
        [{ meta: '{"k":1}', tags: ["a"] }, { meta: null, tags: [] }],
      );
    });
  });
});
