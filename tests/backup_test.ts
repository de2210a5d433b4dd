import assert from "node:assert/strict";
import { ENGINE, onDuckDB } from "./helpers/engine.ts";
import { Backups } from "../src/service/backups.ts";
import { createLogger } from "../src/log.ts";
import { openStore } from "../src/store/duckdb/mod.ts";
import { errorOf, mint, ok, spawn, TestServer, uploadForm } from "./helpers/server.ts";

const WRITERS = 16;
const BATCH = 10;
/** Writers 0–3 also write each batch to `mirror`, after their own table acknowledged it. */
const MIRRORED = 4;

interface Batch {
  readonly writer: number;
  readonly batch: number;
  readonly sentAt: number;
  ackAt?: number;
}

const table = (columns: [string, string][]) => ({
  table: { columns: columns.map(([name, type]) => ({ name, type })) },
});

/** The (writer, batch) pairs of `rows`, each with how many of its rows there are. */
function batchesOf(rows: { writer: number; batch: number }[]): Map<string, number> {
  const found = new Map<string, number>();
  for (const row of rows) {
    const key = `${row.writer}/${row.batch}`;
    found.set(key, (found.get(key) ?? 0) + 1);
  }
  return found;
}

/** Every record of `name` (which may carry `?schema=`), in insertion order, page by page. */
async function allRecords(server: TestServer, name: string): Promise<Record<string, unknown>[]> {
  const records: Record<string, unknown>[] = [];
  const [table, query] = name.split("?");
  for (let offset = 0;; offset += 10_000) {
    const page = ok(
      await server.request(
        "GET",
        `table/${table}/records?limit=10000&offset=${offset}${query ? `&${query}` : ""}`,
      ),
    );
    records.push(...page.records);
    if (page.records.length < 10_000) return records;
  }
}

/** What a client sees of the whole database: tables, their definitions, rows and templates. */
async function everything(server: TestServer): Promise<unknown> {
  const listing = ok(await server.request("GET", "table?limit=1000"));
  const tables: Record<string, unknown> = {};
  for (const { schema, name } of listing.tables as { schema: string; name: string }[]) {
    tables[`${schema}.${name}`] = {
      definition: ok(await server.request("GET", `table/${name}?schema=${schema}`)),
      records: await allRecords(server, `${name}?schema=${schema}`),
    };
  }
  return { tables, templates: ok(await server.request("GET", "table_template")) };
}

onDuckDB.test("backups: taken under 16 writers, one holds exactly the acknowledged batches of a moment, and a restored service answers as the original did", async () => {
  const server = await TestServer.start();
  let restored: TestServer | undefined;
  try {
    const columns: [string, string][] = [
      ["id", "bigserial"],
      ["writer", "integer"],
      ["batch", "integer"],
      ["n", "integer"],
    ];
    for (let t = 0; t < 4; t++) {
      ok(await server.request("POST", `table/t${t}`, { body: table(columns) }));
    }
    ok(await server.request("POST", "table/mirror", { body: table(columns) }));
    ok(
      await server.request("POST", "table_template/kept", {
        body: { table_template: { columns: [{ name: "a", type: "integer" }] } },
      }),
    );

    const batches: Batch[] = [];
    let stopping = false;
    const write = async (writer: number) => {
      for (let batch = 0; !stopping; batch++) {
        const rows = Array.from({ length: BATCH }, (_, n) => ({ writer, batch, n }));
        const sent: Batch = { writer, batch, sentAt: performance.now() };
        batches.push(sent);
        ok(await server.request("POST", `table/t${writer % 4}/records`, { body: rows }));
        sent.ackAt = performance.now();
        if (writer < MIRRORED) {
          ok(await server.request("POST", "table/mirror/records", { body: rows }));
        }
      }
    };
    const acked = (writer: number, after = 0) =>
      batches.filter((b) => b.writer === writer && b.ackAt !== undefined && b.sentAt > after)
        .length;
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => write(w));

    await until(() => Array.from({ length: WRITERS }, (_, w) => acked(w)).every((n) => n >= 3));
    const began = performance.now();
    const taken = ok(await server.request("POST", "backup"));
    const ended = performance.now();
    // Writes went on through the backup, and after it.
    await until(() =>
      Array.from({ length: WRITERS }, (_, w) => acked(w, ended)).every((n) => n >= 2)
    );
    stopping = true;
    await Promise.all(writers);

    assert.match(taken.id, /^\d{8}T\d{6}Z$/);
    assert.ok(taken.bytes > 0 && taken.seconds >= 0);
    const listed = ok(await server.request("GET", "backup")).backups;
    assert.deepEqual(listed, [{
      id: taken.id,
      time: taken.time,
      bytes: taken.bytes,
      scheduled: false,
    }]);

    // The original, as it was at the backup's moment, is unknown; the restored one says it.
    const dataDir = await Deno.makeTempDir({ prefix: "table-service-test-" });
    const copy = `${dataDir}-download.duckdb`;
    const download = await fetch(`${server.base}/api/v1/backup/${taken.id}`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    assert.equal(download.status, 200);
    await Deno.writeFile(copy, new Uint8Array(await download.arrayBuffer()));
    assert.equal((await Deno.stat(copy)).size, taken.bytes);
    restored = await TestServer.start({}, dataDir, { restore: copy });
    await Deno.remove(copy);

    const mirrored = batchesOf(await allRecords(restored, "mirror") as never);
    for (let t = 0; t < 4; t++) {
      const rows = await allRecords(restored, `t${t}`);
      const found = batchesOf(rows as never);
      for (const b of batches.filter((b) => b.writer % 4 === t)) {
        const key = `${b.writer}/${b.batch}`;
        const count = found.get(key);
        // No batch in part; every one acknowledged before the backup began; none sent after it.
        assert.ok(count === undefined || count === BATCH, `batch ${key} has ${count} rows`);
        if (b.ackAt !== undefined && b.ackAt < began) {
          assert.equal(count, BATCH, `batch ${key} lost`);
        }
        if (b.sentAt > ended) assert.equal(count, undefined, `batch ${key} from after the backup`);
        // One moment for every table: a mirrored batch was written to its own table first.
        if (mirrored.has(key)) assert.equal(count, BATCH, `mirror has ${key}, t${t} has not`);
      }
      // Its serial goes on after the rows it holds.
      ok(
        await restored.request("POST", `table/t${t}/records`, {
          body: [{ writer: -1, batch: -1, n: -1 }],
        }),
      );
      const ids: number[] = (await allRecords(restored, `t${t}`)).map((r) => Number(r.id));
      assert.equal(new Set(ids).size, ids.length, "the sequence went on from its value");
    }

    // Definitions and templates, which did not change meanwhile, are the original's.
    for (const name of ["t0", "t1", "t2", "t3", "mirror"]) {
      assert.deepEqual(
        ok(await restored.request("GET", `table/${name}`)),
        ok(await server.request("GET", `table/${name}`)),
      );
    }
    assert.deepEqual(
      ok(await restored.request("GET", "table_template")),
      ok(await server.request("GET", "table_template")),
    );
    assert.match(restored.stdout, /Restored ".*" into /);
  } finally {
    await restored?.dispose();
    await server.dispose();
  }
});

onDuckDB.test("backups: a restored service answers exactly what the original answered", async () => {
  const server = await TestServer.start();
  let restored: TestServer | undefined;
  try {
    const body = {
      table: {
        columns: [
          { name: "id", type: "serial" },
          { name: "email", type: "varchar(80)", is_nullable: false },
          { name: "score", type: "numeric(10,2)", default: "0" },
        ],
        constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["email"] }] },
      },
    };
    ok(await server.request("POST", "schema/sales"));
    ok(await server.request("POST", "table/people", { body }));
    ok(
      await server.request("POST", "table/people/records", {
        body: [{ email: "a@x", score: 1.5 }, { email: "b@x" }],
      }),
    );
    ok(
      await server.request("POST", "table/orders?schema=sales", {
        body: table([["id", "bigserial"], ["note", "text"]]),
      }),
    );
    ok(
      await server.request("POST", "table/orders/records?schema=sales", { body: [{ note: "n" }] }),
    );
    const before = await everything(server);
    const { id } = ok(await server.request("POST", "backup"));

    // The original's file goes on changing; the restored one is the backup's moment.
    ok(await server.request("POST", "table/people/records", { body: [{ email: "c@x" }] }));
    const dataDir = await Deno.makeTempDir({ prefix: "table-service-test-" });
    restored = await TestServer.start({}, dataDir, {
      restore: `${server.dataDir}/backups/${id}.duckdb`,
    });
    assert.deepEqual(await everything(restored), before);
    assert.deepEqual(
      ok(await restored.request("GET", "schema")),
      ok(await server.request("GET", "schema")),
    );
    // Constraints came along: the unique email is refused again.
    errorOf(
      await restored.request("POST", "table/people/records", { body: [{ email: "a@x" }] }),
      409,
    );
  } finally {
    await restored?.dispose();
    await server.dispose();
  }
});

onDuckDB.test("backups: restore over a database keeps the one it replaces, and refuses a damaged file untouched", async (t) => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/kept", { body: table([["a", "integer"]]) }));
    ok(await server.request("POST", "table/kept/records", { body: [{ a: 1 }] }));
    const { id } = ok(await server.request("POST", "backup"));
    const backup = `${server.dataDir}/backups/${id}.duckdb`;
    const outside = `${server.dataDir}-${id}.duckdb`;
    await Deno.copyFile(backup, outside);
    ok(await server.request("POST", "table/later", { body: table([["b", "integer"]]) }));
    await server.stop();
    const database = `${server.dataDir}/tables.duckdb`;

    const refused = async (file: string, reason: RegExp) => {
      const before = await Deno.readFile(database);
      const entries = [...Deno.readDirSync(server.dataDir)].map((e) => e.name).sort();
      const process = spawn({ ...server.env, PATH: Deno.env.get("PATH") ?? "" }, [
        "--restore",
        file,
      ]);
      const { code, stderr } = await process.output();
      const message = new TextDecoder().decode(stderr);
      assert.equal(code, 1, message);
      assert.match(
        message,
        new RegExp(`Cannot restore ".*": ${reason.source}.*; nothing was changed`),
      );
      assert.deepEqual(await Deno.readFile(database), before);
      assert.deepEqual([...Deno.readDirSync(server.dataDir)].map((e) => e.name).sort(), entries);
    };

    await t.step("a file that is not a database", async () => {
      await Deno.writeTextFile(`${outside}.txt`, "id,name\n1,a\n");
      await refused(`${outside}.txt`, /it is not a DuckDB database file/);
    });
    await t.step("a truncated backup", async () => {
      const bytes = await Deno.readFile(outside);
      await Deno.writeFile(`${outside}.cut`, bytes.subarray(0, bytes.length - 200_000));
      await refused(`${outside}.cut`, /the file is truncated/);
    });
    await t.step("a DuckDB file that is not the service's", async () => {
      const other = `${outside}.other`;
      // A store's file whose metadata lost a table: made by the service, then cut down.
      const scratch = await TestServer.start({}, await Deno.makeTempDir());
      await scratch.stop();
      await Deno.copyFile(`${scratch.dataDir}/tables.duckdb`, other);
      await Deno.remove(scratch.dataDir, { recursive: true });
      const { DuckDBInstance } = await import("@duckdb/node-api");
      const instance = await DuckDBInstance.create(other);
      const connection = await instance.connect();
      await connection.run("DROP TABLE _table_service.templates");
      connection.closeSync();
      instance.closeSync();
      await refused(other, /it is not the service's database: its metadata lacks templates/);
    });
    await t.step("a file that does not exist", async () => {
      await refused(`${outside}.missing`, /there is no such file/);
    });

    await t.step("a good one is put in place, the replaced database kept beside it", async () => {
      const process = spawn({ ...server.env, PATH: Deno.env.get("PATH") ?? "" }, [
        "--restore",
        outside,
        "--port",
        "0",
      ]);
      const decoder = new TextDecoder();
      let out = "";
      for await (const chunk of process.stdout) {
        out += decoder.decode(chunk);
        if (/Listening on/.test(out) && /Restored/.test(out)) break;
      }
      // Answering, it has its signal handlers.
      const port = /Listening on http:\/\/[^:]+:(\d+)/.exec(out)![1];
      await (await fetch(`http://127.0.0.1:${port}/healthz`)).body?.cancel();
      process.kill("SIGTERM");
      assert.equal((await process.status).code, 0);
      await process.stderr.cancel();
      const kept = [...Deno.readDirSync(server.dataDir)].map((e) => e.name)
        .filter((name) => name.startsWith("tables.duckdb.before-restore-"));
      assert.equal(kept.length, 1, out);
      assert.match(out, new RegExp(`kept as .*${kept[0]}`));
      await server.restart();
      const names = ok(await server.request("GET", "table")).tables.map((t: { name: string }) =>
        t.name
      );
      assert.deepEqual(names, ["kept"]);
      // The replaced database is whole: opened as it is, it has the later table.
      const { DuckDBInstance } = await import("@duckdb/node-api");
      const instance = await DuckDBInstance.create(`${server.dataDir}/${kept[0]}`, {
        access_mode: "READ_ONLY",
      });
      const connection = await instance.connect();
      const reader = await connection.runAndReadAll(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'public' ORDER BY 1",
      );
      assert.deepEqual(reader.getRowObjectsJS().map((r) => r.table_name), ["kept", "later"]);
      connection.closeSync();
      instance.closeSync();
    });
    for (const suffix of ["", ".txt", ".cut", ".other"]) await Deno.remove(`${outside}${suffix}`);
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("backups: list, download, remove; one at a time; ids are seconds", async () => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/a", { body: table([["x", "integer"]]) }));
    const [first, second] = await Promise.allSettled([
      server.request("POST", "backup"),
      server.request("POST", "backup"),
    ]).then((all) => all.map((a) => (a as PromiseFulfilledResult<{ status: number }>).value));
    // The second began while the first ran: refused, not queued.
    const statuses = [first!.status, second!.status].sort();
    assert.deepEqual(statuses, [200, 409], JSON.stringify([first, second]));
    const a = ok(await server.request("POST", "backup"));
    const b = ok(await server.request("POST", "backup"));
    assert.notEqual(a.id, b.id);
    const listed = ok(await server.request("GET", "backup")).backups;
    assert.equal(listed.length, 3);
    assert.deepEqual(
      listed.map((x: { id: string }) => x.id),
      [...listed.map((x: { id: string }) => x.id)].sort().reverse(),
    );

    ok(await server.request("DELETE", `backup/${a.id}`));
    errorOf(await server.request("DELETE", `backup/${a.id}`), 404);
    errorOf(await server.request("GET", `backup/${a.id}`), 404);
    errorOf(await server.request("GET", "backup/..%2Ftables"), 404);
    errorOf(await server.request("GET", "backup/20261128T101500Z"), 404);
    assert.equal(ok(await server.request("GET", "backup")).backups.length, 2);
    // Only complete backups are files there: nothing partial, no log beside them.
    const files = [...Deno.readDirSync(`${server.dataDir}/backups`)].map((e) => e.name).sort();
    assert.deepEqual(
      files,
      listed.filter((x: { id: string }) => x.id !== a.id).map((x: { id: string }) =>
        `${x.id}.duckdb`
      ).sort(),
    );
  } finally {
    await server.dispose();
  }
});

Deno.test("backups: need the admin scope and a token confined to no schema", async () => {
  const server = await TestServer.start();
  try {
    const writer = await mint({ scope: "tables:read tables:write templates:write" });
    const confined = await mint({ scope: "admin tables:read", schemas: ["public"] });
    for (
      const [method, path] of [["POST", "backup"], ["GET", "backup"], [
        "GET",
        "backup/20261128T101500Z",
      ], ["DELETE", "backup/20261128T101500Z"]]
    ) {
      const scope = errorOf(await server.request(method!, path!, { token: writer }), 403);
      assert.match(scope.message, /"admin" scope/);
      const schemas = errorOf(await server.request(method!, path!, { token: confined }), 403);
      assert.match(schemas.message, /without a "schemas" claim: a backup holds every schema/);
    }
    if (ENGINE === "postgres") {
      for (
        const [method, path] of [["POST", "backup"], ["GET", "backup"], ["GET", "backup/x"], [
          "DELETE",
          "backup/x",
        ]]
      ) {
        const error = errorOf(await server.request(method!, path!), 501);
        assert.equal(error.type, "not_implemented");
        assert.match(error.message, /pg_dump/);
      }
    }
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("backups: one killed part way leaves nothing listed, and is cleared at the next start", async () => {
  const server = await TestServer.spawn({ DUCKDB_THREADS: "1" });
  try {
    ok(
      await server.request("POST", "table/big", { body: table([["n", "bigint"], ["s", "text"]]) }),
    );
    const lines = Array.from({ length: 200_000 }, (_, n) => `${n},${"x".repeat(40)}${n}`);
    for (let i = 0; i < 5; i++) {
      ok(
        await server.request("POST", "table/big/upload/csv?if_exists=append", {
          body: uploadForm(new TextEncoder().encode(`n,s\n${lines.join("\n")}\n`), "rows.csv"),
        }),
      );
    }
    const dir = `${server.dataDir}/backups`;
    let answered = false;
    const taking = server.request("POST", "backup").then(() => answered = true, () => {});
    // The copy is under way once its file appears.
    while (![...Deno.readDirSync(dir)].some((e) => e.name.endsWith(".partial"))) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await server.stop("SIGKILL");
    await taking;
    assert.equal(answered, false, "the backup was complete before the kill");
    assert.notDeepEqual([...Deno.readDirSync(dir)], []);
    await server.restart();
    assert.deepEqual(ok(await server.request("GET", "backup")).backups, []);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
    assert.equal(ok(await server.request("GET", "table/big/records?limit=1")).total, 1_000_000);
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("backups: the schedule takes them and keeps the newest BACKUP_KEEP of its own", async () => {
  const dir = await Deno.makeTempDir({ prefix: "table-service-test-" });
  await Deno.mkdir(`${dir}/backups`);
  const store = await openStore({
    path: `${dir}/tables.duckdb`,
    spoolDir: dir,
    backupDir: `${dir}/backups`,
    tempDir: dir,
    threads: 1,
  });
  try {
    const lines: string[] = [];
    // A clock a second further on at each look: ids never wait for the next second.
    let second = Date.parse("2026-11-28T10:00:00Z");
    const clock = () => new Date(second += 1000);
    const backups = (await Backups.open(
      store,
      `${dir}/backups`,
      createLogger("info", (line) => lines.push(line)),
      clock,
    ))!;
    const manual = await backups.take();
    const taken = () => lines.filter((line) => /"scheduled":true/.test(line)).length;
    const stop = backups.schedule(10, 2);
    while (taken() < 4) await new Promise((resolve) => setTimeout(resolve, 10));
    await stop();
    const listed = await backups.list();
    const scheduled = listed.filter((backup) => backup.scheduled);
    assert.equal(scheduled.length, 2, JSON.stringify(listed));
    // The newest two of its own, and the one taken on request, which it never removes.
    const ids = lines.map((line) => JSON.parse(line)).filter((line) => line.scheduled)
      .map((line) => line.id).sort();
    assert.deepEqual(scheduled.map((b) => b.id).sort(), ids.slice(-2));
    assert.ok(listed.some((backup) => backup.id === manual.id && !backup.scheduled));
    const files = [...Deno.readDirSync(`${dir}/backups`)].map((e) => e.name).sort();
    assert.deepEqual(
      files,
      [
        `${manual.id}.duckdb`,
        ...ids.slice(-2).flatMap((id) => [`${id}.duckdb`, `${id}.scheduled`]),
      ].sort(),
    );
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
