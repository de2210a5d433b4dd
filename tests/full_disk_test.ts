import assert from "node:assert/strict";
import { type Answer, assertSpoolEmpty, ok, TestServer } from "./helpers/server.ts";
import { fill, unmountable, withTmpfs } from "./helpers/tmpfs.ts";
import { DUCKDB_ONLY } from "./helpers/engine.ts";

/** `count` rows from id `first` on, each with some 200 bytes of text. */
function rows(first: number, count: number): { id: number; s: string }[] {
  return Array.from({ length: count }, (_, i) => ({ id: first + i, s: `${first + i}`.repeat(40) }));
}

/** The lines of `stderr` that are not JSON log lines, such as a stack trace. */
function unstructured(stderr: string): string[] {
  return stderr.split("\n").filter((line) => {
    if (line.trim() === "") return false;
    try {
      return typeof JSON.parse(line) !== "object";
    } catch {
      return true;
    }
  });
}

/**
 * `send`'s answer once it is not 507: a database reopened read-only on the full disk tries
 * read-write again at most once a second, so the first write after space was freed may still
 * meet the read-only one.
 */
async function afterFreeing(send: () => Promise<Answer>): Promise<Answer> {
  for (let tries = 1;; tries++) {
    const answer = await send();
    if (answer.status !== 507 || tries === 5) return answer;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Creates table `t`: a BIGINT `id` and a VARCHAR `s`, as {@link rows} fills them. */
async function createTable(server: TestServer): Promise<void> {
  ok(
    await server.request("POST", "table/t", {
      body: {
        table: { columns: [{ name: "id", type: "BIGINT" }, { name: "s", type: "VARCHAR" }] },
      },
    }),
  );
}

/**
 * Creates table `t` and inserts `batch` rows at a time into it until an insert is refused: the
 * rows acknowledged, and the refusal.
 */
async function loadUntilRefused(
  server: TestServer,
  batch: number,
): Promise<{ acknowledged: number; refused: Answer }> {
  await createTable(server);
  let acknowledged = 0;
  for (let i = 0; i < 1000; i++) {
    const answer = await server.request("POST", "table/t/records", {
      body: rows(acknowledged, batch),
    });
    if (answer.status !== 200) return { acknowledged, refused: answer };
    acknowledged += batch;
  }
  throw new Error("The disk never filled up");
}

/**
 * Runs `work` on a service whose data directory is a 64 MB tmpfs half filled by a 32 MB file,
 * `filler`: room the test gives back later by deleting it, as an operator deleting old files
 * would, enough for the checkpoint that failed (DuckDB's write-ahead log reaches 16 MB before
 * one).
 */
async function onSmallDisk(
  work: (server: TestServer, dir: string) => Promise<void>,
): Promise<void> {
  await withTmpfs(64, async (dir) => {
    await fill(`${dir}/filler`, 32 << 20);
    // In a process of its own: only its exit guarantees that nothing holds a file on the tmpfs
    // when it is unmounted, and its standard error holds whatever it printed, JSON or not.
    const server = await TestServer.spawn({}, dir);
    try {
      await work(server, dir);
    } finally {
      await server.stop();
    }
  });
}

/**
 * Loads rows `batch` at a time into a service on a 64 MB tmpfs until a write is refused,
 * checks the refusal and what is kept, then frees space and writes again.
 */
async function fillAndFree(batch: number): Promise<void> {
  await onSmallDisk(async (server, dir) => {
    const { acknowledged, refused } = await loadUntilRefused(server, batch);
    assert.equal(refused.status, 507, refused.text);
    assert.equal(refused.body.error.type, "insufficient_storage");
    assert.match(refused.body.error.message, /^No space is left on the disk/);

    // Every acknowledged row, and none of the refused batch.
    const read = ok(await server.request("GET", "table/t/records?limit=1"));
    assert.equal(read.total, acknowledged);
    const last = ok(await server.request("GET", `table/t/records?offset=${acknowledged - 1}`));
    assert.deepEqual(last.records.map((r: { id: number }) => r.id), [acknowledged - 1]);
    assert.equal(ok(await server.request("GET", "/healthz")).status, "ok");

    // With no room left at all, a body too large to keep in memory cannot be spooled either.
    await fill(`${dir}/rest`);
    const spooled = await server.request("POST", "table/u/upload/json", {
      body: { data: rows(0, 10_000) },
    });
    assert.equal(spooled.status, 507, spooled.text);
    await assertSpoolEmpty(server);

    await Deno.remove(`${dir}/rest`);
    await Deno.remove(`${dir}/filler`);
    ok(
      await afterFreeing(() =>
        server.request("POST", "table/t/records", { body: rows(acknowledged, batch) })
      ),
    );
    ok(await server.request("POST", "table/u/upload/json", { body: { data: rows(0, 10_000) } }));
    assert.equal(
      ok(await server.request("GET", "table/t/records?limit=1")).total,
      acknowledged + batch,
    );
    assert.equal(ok(await server.request("GET", "/readyz")).status, "ready");
    assert.deepEqual(unstructured(server.stderr), []);
  });
}

/** Every sum of some of `sizes`. */
function sumsOf(sizes: readonly number[]): Set<number> {
  let sums = new Set([0]);
  for (const size of sizes) sums = new Set([...sums, ...[...sums].map((sum) => sum + size)]);
  return sums;
}

// A full DATA_DIR fails DuckDB's file and log; on PostgreSQL the database lives elsewhere.
const skip = DUCKDB_ONLY.ignore ? "a test of DuckDB's file on a full disk" : unmountable;
const ignore = skip !== undefined;
const why = skip ? ` (ignored: ${skip})` : "";

Deno.test({
  name: "A full disk met by a checkpoint carrying a large commit answers it 507, keeps every " +
    "acknowledged row and reads, and takes writes again once space is freed" + why,
  ignore,
  // About 1 MB a batch: DuckDB checkpoints instead of writing such a commit to its log.
  fn: () => fillAndFree(5000),
});

Deno.test({
  name: "A full disk met by the checkpoint after a small commit keeps that commit, answers the " +
    "write the log cannot take 507, and takes writes again once space is freed" + why,
  ignore,
  // About 200 KB a batch: logged, then checkpointed.
  fn: () => fillAndFree(1000),
});

Deno.test({
  name: "/healthz answers 503 while a database that failed cannot be reopened, and 200 once it " +
    "can" + why,
  ignore,
  fn: () =>
    onSmallDisk(async (server, dir) => {
      // The service goes on with the file it has open; a reopen would find this one instead.
      const path = `${dir}/tables.duckdb`;
      await Deno.rename(path, `${dir}/kept`);
      await Deno.writeFile(path, new TextEncoder().encode("not a database"));
      const { acknowledged, refused } = await loadUntilRefused(server, 5000);
      assert.equal(refused.status, 507, refused.text);

      const health = await server.request("GET", "/healthz");
      assert.equal(health.status, 503, health.text);
      assert.equal(health.body.error.type, "unavailable");
      assert.equal((await server.request("GET", "table/t/records")).status, 503);

      await Deno.rename(`${dir}/kept`, path);
      await Deno.remove(`${dir}/filler`);
      assert.equal(ok(await server.request("GET", "/healthz")).status, "ok");
      assert.equal(ok(await server.request("GET", "table/t/records")).total, acknowledged);
    }),
});

Deno.test({
  name: "A full disk met by eight writers at once loses no acknowledged row, answers only 507 " +
    "among failures, goes on answering reads and takes writes again once space is freed" + why,
  ignore,
  fn: () =>
    onSmallDisk(async (server, dir) => {
      await createTable(server);
      let next = 0;
      let acknowledged = 0;
      const failures = new Set<number>();
      const refusedSizes: number[] = [];
      await Promise.all(Array.from({ length: 8 }, async (_, writer) => {
        // Small and large commits: logged then checkpointed, or checkpointed instead.
        const batch = writer % 2 ? 300 : 3000;
        for (let refused = 0; refused < 3;) {
          const first = next;
          next += batch;
          const answer = await server.request("POST", "table/t/records", {
            body: rows(first, batch),
          });
          if (answer.status === 200) acknowledged += batch;
          else {
            refused++;
            failures.add(answer.status);
            refusedSizes.push(batch);
          }
        }
      }));
      assert.deepEqual([...failures], [507]);
      // Every acknowledged row is kept. Rarely (once in about 30 runs) a batch answered 507 was
      // stored all the same (docs/operations.md, A full disk): then only whole refused
      // batches, never a part of one.
      const read = ok(await server.request("GET", "table/t/records?limit=1"));
      const extra = read.total - acknowledged;
      assert.ok(
        extra === 0 || sumsOf(refusedSizes).has(extra),
        `${extra} rows beyond those acknowledged`,
      );

      await Deno.remove(`${dir}/filler`);
      ok(
        await afterFreeing(() =>
          server.request("POST", "table/t/records", { body: rows(next, 1) })
        ),
      );
      assert.equal(
        ok(await server.request("GET", "table/t/records?limit=1")).total,
        acknowledged + extra + 1,
      );
      assert.deepEqual(unstructured(server.stderr), []);
    }),
});

Deno.test({
  name: "A full disk that fails the database cuts short an export whose client stopped " +
    "reading, logs why as JSON, and reads and writes go on once space is freed" + why,
  ignore,
  fn: () =>
    onSmallDisk(async (server, dir) => {
      let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
      try {
        await createTable(server);
        // Some 10 MB of CSV, sent uncompressed: more than the sockets between hold, so the
        // export waits for its client, holding its connection to the database.
        ok(await server.request("POST", "table/t/records", { body: rows(0, 50_000) }));
        const exported = await fetch(`${server.base}/api/v1/table/t/records/csv`, {
          headers: { authorization: `Bearer ${server.token}`, "accept-encoding": "identity" },
        });
        assert.equal(exported.status, 200);
        reader = exported.body!.getReader();
        await reader.read();

        let acknowledged = 50_000;
        for (let refused = false; !refused;) {
          const answer = await server.request("POST", "table/t/records", {
            body: rows(acknowledged, 5000),
          });
          if (answer.status === 200) acknowledged += 5000;
          else {
            assert.equal(answer.status, 507, answer.text);
            refused = true;
          }
        }
        await Deno.remove(`${dir}/filler`);

        // The failed database was reopened without waiting for the export's client.
        assert.equal(ok(await server.request("GET", "/healthz")).status, "ok");
        assert.equal(
          ok(await server.request("GET", "table/t/records?limit=1")).total,
          acknowledged,
        );
        ok(
          await afterFreeing(() =>
            server.request("POST", "table/t/records", { body: rows(acknowledged, 1) })
          ),
        );
        // The export ends cut short, not as if it were complete.
        await assert.rejects(async () => {
          while (!(await reader!.read()).done);
        });
        assert.deepEqual(unstructured(server.stderr), []);
        assert.match(server.stderr, /"error":"No space is left on the disk/);
      } finally {
        // A failing test's export must not hold the server's stop up.
        await reader?.cancel().catch(() => {});
      }
    }),
});

Deno.test({
  name: "On a full disk with writers failing in a loop, reads go on: 500 in a row are all 200 " +
    "with the rows acknowledged before" + why,
  ignore,
  fn: () =>
    onSmallDisk(async (server) => {
      const { acknowledged, refused } = await loadUntilRefused(server, 5000);
      assert.equal(refused.status, 507, refused.text);
      // Writers keep failing beside the reads; each failure makes DuckDB invalidate the
      // instance, and a read meeting that waits for the reopen instead of failing.
      let writing = true;
      const writers = Array.from({ length: 2 }, async () => {
        let failures = 0;
        while (writing) {
          const answer = await server.request("POST", "table/t/records", {
            body: rows(acknowledged + 1_000_000, 5000),
          });
          if (answer.status !== 200) failures++;
        }
        return failures;
      });
      const statuses = new Map<number, number>();
      try {
        for (let i = 0; i < 500; i++) {
          const answer = await server.request("GET", "table/t/records?limit=1");
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status === 200) assert.equal(answer.body.total, acknowledged);
        }
      } finally {
        writing = false;
      }
      const failures = (await Promise.all(writers)).reduce((a, b) => a + b, 0);
      assert.ok(failures > 0, "no write failed beside the reads");
      assert.deepEqual([...statuses], [[200, 500]]);
    }),
});

Deno.test({
  name: "A backup that meets a full disk is 507 and leaves nothing listed; the service goes on" +
    why,
  ignore,
  fn: () =>
    onSmallDisk(async (server, dir) => {
      await createTable(server);
      for (let at = 0; at < 40_000; at += 10_000) {
        ok(await server.request("POST", "table/t/records", { body: rows(at, 10_000) }));
      }
      // Half a megabyte left: the copy begins, and fails part way.
      await fill(`${dir}/spare`, 512 << 10);
      await fill(`${dir}/rest`);
      await Deno.remove(`${dir}/spare`);
      const refused = await server.request("POST", "backup");
      assert.equal(refused.status, 507, refused.text);
      assert.deepEqual(ok(await server.request("GET", "backup")).backups, []);
      assert.deepEqual([...Deno.readDirSync(`${dir}/backups`)], []);
      assert.equal(ok(await server.request("GET", "table/t/records?limit=1")).total, 40_000);

      await Deno.remove(`${dir}/rest`);
      const taken = ok(await afterFreeing(() => server.request("POST", "backup")));
      assert.deepEqual(
        ok(await server.request("GET", "backup")).backups.map((b: { id: string }) => b.id),
        [taken.id],
      );
      assert.deepEqual(unstructured(server.stderr), []);
    }),
});
