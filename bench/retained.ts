/**
 * `deno task bench retained`: the native memory the service keeps for good per request, what
 * single node-api calls keep in a bare Deno process, and two of those calls under Node.
 *
 * The Deno parts run with `--v8-flags=--expose-gc` and read glibc's "in use" figure only after
 * collecting all garbage (see allocators.ts): memory still in use then is kept, not waiting
 * for a finalizer. A batch of requests (or calls) runs between two readings; the difference
 * over the batch is what each one kept. Two batches follow a warm-up, so a one-off cache
 * shows as a first batch larger than the second. The controls keep nothing native:
 * `GET /table/{name}` is answered from the service's cache, and `JSON.parse` is plain
 * JavaScript.
 *
 * The bare calls separate two sources: each object the DuckDB bindings hand to JavaScript
 * (a result, an appender) keeps a few dozen bytes after its finalizer ran, and DuckDB's
 * late-materialized top-N (the plan of a page of whole rows) keeps more, which the same
 * query with late materialization off does not. Last, retained_node.mjs runs two of the
 * bare calls under Node with the same bindings: what grows there too is DuckDB's, not Deno's.
 * Node cannot read glibc's figures, so that part reads RSS (see retained_node.mjs).
 *
 * `deno task bench growth` runs one bare call for many batches instead, to show whether what
 * each call keeps levels off as the calls add up (it does not).
 *
 * @module
 */

import { DuckDBInstance, VARCHAR } from "@duckdb/node-api";
import { ALL_SCOPES, mint, ok, spawn, TestServer } from "../tests/helpers/server.ts";
import { allocators, collectGarbage, readAllocators } from "./allocators.ts";
import { createKeyedTable, row } from "./generate.ts";
import { PAGE, WIDE_TABLE } from "./retained_queries.mjs";

const ROOT = new URL("../", import.meta.url).pathname;
const MB = 1024 ** 2;
const TABLE = "retained";

/**
 * Runs `runBatch` (a batch of `count` items) once to warm up and then twice more, reading
 * glibc's memory in use (MB, by `inUse`) before and after each; the bytes each item kept in
 * each measured batch, formatted for the table.
 */
async function keptPerItem(
  count: number,
  runBatch: () => Promise<void>,
  inUse: () => Promise<number>,
): Promise<string> {
  await runBatch();
  const readings = [await inUse()];
  for (let b = 0; b < 2; b++) {
    await runBatch();
    readings.push(await inUse());
  }
  return readings.slice(1).map((after, b) =>
    `${Math.round((after - readings[b]!) * MB / count)}`.padStart(7)
  ).join(" ");
}

/** glibc's memory in use in this process (MB), read after collecting all garbage. */
async function inUseAfterCollection(): Promise<number> {
  await collectGarbage();
  return readAllocators().glibc.inUse;
}

/** Runs `work` `count` times over `clients` concurrent loops. */
async function batch(count: number, clients: number, work: () => Promise<void>): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (left-- > 0) await work();
    }),
  );
}

/**
 * Prints the bytes the service keeps per request for inserts and reads at 1 and 16 clients,
 * over `requests` requests per batch; then runs the bare Deno part and the part under Node.
 */
export async function retained(requests = 4_000): Promise<void> {
  const token = await mint({ scope: ALL_SCOPES, expiresIn: 3_600 });
  const statsFile = await Deno.makeTempFile({ prefix: "bench-retained-", suffix: ".json" });
  const server = await TestServer.spawn(
    { LOG_LEVEL: "error", BENCH_ALLOCATOR_STATS: statsFile },
    undefined,
    (env) => spawn(env, [], ["--v8-flags=--expose-gc", "--preload", `${ROOT}bench/allocators.ts`]),
  ).catch(async (error) => {
    await Deno.remove(statsFile).catch(() => {});
    throw error;
  });
  try {
    await createKeyedTable(server, token, TABLE);
    const inUse = async () => {
      const stats = await allocators(server.pid, statsFile);
      if ("error" in stats) throw new Error(`Cannot read the allocators: ${stats.error}`);
      return stats.glibc.inUse;
    };
    let next = 0;
    const send = async (method: string, path: string, body?: unknown) =>
      void ok(await server.request(method, path, { token, body }));
    const kinds: [string, () => Promise<void>][] = [
      ["GET /table/{name} (control)", () => send("GET", `table/${TABLE}`)],
      [
        "POST /records, 10 rows",
        () => send("POST", `table/${TABLE}/records`, Array.from({ length: 10 }, () => row(next++))),
      ],
      ["GET /records?limit=10", () => send("GET", `table/${TABLE}/records?limit=10`)],
    ];
    console.log(
      `\nNative memory kept per request: glibc's memory in use after a full collection, ` +
        `before and after each batch of ${requests} requests`,
    );
    console.log("request                        clients   bytes kept per request (two batches)");
    for (const clients of [1, 16]) {
      for (const [label, work] of kinds) {
        const kept = await keptPerItem(requests, () => batch(requests, clients, work), inUse);
        console.log(`${label.padEnd(30)} ${String(clients).padStart(7)}   ${kept}`);
      }
    }
  } finally {
    await server.dispose();
    await Deno.remove(statsFile).catch(() => {});
  }
  await inBareProcess([], "The bare node-api measurement failed");
  // Node resolves the bindings from the script's place: the node_modules Deno installed.
  let node: Deno.CommandOutput;
  try {
    node = await new Deno.Command("node", {
      args: ["--expose-gc", `${ROOT}bench/retained_node.mjs`],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    console.log("\nNode is not on PATH: the comparison under Node is skipped.");
    return;
  }
  if (!node.success) throw new Error("The measurement under Node failed");
}

/**
 * Runs this file with `args` in a bare Deno process with `--expose-gc`, so that each reading
 * there comes after a full collection; throws `failure` if it fails.
 */
async function inBareProcess(args: string[], failure: string): Promise<void> {
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", `${ROOT}bench/retained.ts`, ...args],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!run.success) throw new Error(failure);
}

/**
 * The `[batches] [calls]` of `deno task bench growth`, 10 and 100,000 when not given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { growthCounts } from "./retained.ts";
 *
 * assert.deepEqual(growthCounts([]), [10, 100_000]);
 * assert.deepEqual(growthCounts(["3", "2000"]), [3, 2_000]);
 * assert.throws(() => growthCounts(["x"]), /Not counts of batches and calls/);
 * assert.throws(() => growthCounts(["1", "2", "3"]), /Not counts of batches and calls/);
 * ```
 */
export function growthCounts(args: readonly string[]): [number, number] {
  const [batches, calls] = [args[0] ?? "10", args[1] ?? "100000"].map(Number);
  const valid = (n: number | undefined): n is number => Number.isSafeInteger(n) && n! > 0;
  if (args.length > 2 || !valid(batches) || !valid(calls)) {
    throw new Error(
      `Not counts of batches and calls: "${args.join(" ")}"; give [batches] [calls], ` +
        "e.g. growth 10 100000",
    );
  }
  return [batches, calls];
}

/**
 * `deno task bench growth [batches] [calls]`: {@link keptAsCallsAddUp}, in a bare process.
 * The counts are checked here, before that process starts.
 */
export function retainedGrowth(args: readonly string[]): Promise<void> {
  return inBareProcess(
    ["growth", ...growthCounts(args).map(String)],
    "The measurement of memory kept as calls add up failed",
  );
}

/** Prints the bytes single node-api calls keep in this process (run with --expose-gc). */
async function bare(calls = 10_000): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bench-retained-" });
  const instance = await DuckDBInstance.create(`${dir}/bare.duckdb`);
  const connection = await instance.connect();
  // Without late materialization: DuckDB then sorts whole rows instead of fetching the
  // page's rows after sorting their keys.
  const sortsRows = await instance.connect().catch((error) => {
    connection.closeSync();
    instance.closeSync();
    throw error;
  });
  try {
    await connection.run("CREATE TABLE t (a BIGINT)");
    await connection.run(WIDE_TABLE);
    await sortsRows.run("SET late_materialization_max_rows = 0");
    const cases: [string, () => unknown][] = [
      ["JSON.parse of a small object (control)", () => JSON.parse('{"a":[1,2,3]}')],
      ['connection.run("SELECT 42")', () => connection.run("SELECT 42")],
      [
        "createAppender + closeSync",
        async () => (await connection.createAppender("t")).closeSync(),
      ],
      [
        'runAndReadAll("SELECT 42") + rows',
        async () => (await connection.runAndReadAll("SELECT 42")).getRowObjectsJS(),
      ],
      ["connection.run(top 10 of 200,000 rows)", () => connection.run(PAGE)],
      ["the same, late materialization off", () => sortsRows.run(PAGE)],
    ];
    console.log(`\nThe same in a bare Deno ${Deno.version.deno} process, ${calls} calls a batch`);
    console.log("call                                      bytes kept per call (two batches)");
    for (const [label, call] of cases) {
      const kept = await keptPerItem(
        calls,
        () => batch(calls, 1, async () => void await call()),
        inUseAfterCollection,
      );
      console.log(`${label.padEnd(40)} ${kept}`);
    }
  } finally {
    sortsRows.closeSync();
    connection.closeSync();
    instance.closeSync();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Prints glibc's memory in use after each of `batches` batches of `calls` calls, for two calls
 * that each hand JavaScript one native object: one made synchronously without running a query
 * (a logical type), and one query. A figure per call that holds as the calls add up is memory
 * kept for as long as the run lasts; one that falls towards zero is a cache filling up.
 */
async function keptAsCallsAddUp(batches: number, calls: number): Promise<void> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect().catch((error) => {
    instance.closeSync();
    throw error;
  });
  try {
    const cases: [string, () => unknown][] = [
      ["VARCHAR.toLogicalType()", () => VARCHAR.toLogicalType()],
      ['connection.run("SELECT 42")', () => connection.run("SELECT 42")],
    ];
    console.log(`\nMemory kept as calls add up, Deno ${Deno.version.deno}, ${calls} calls a batch`);
    console.log(
      `${"call".padEnd(30)} ${"calls".padStart(9)} ${"glibc in use".padStart(13)} ` +
        "bytes a call so far",
    );
    for (const [label, call] of cases) {
      const runBatch = () => batch(calls, 1, async () => void await call());
      await runBatch();
      const start = await inUseAfterCollection();
      for (let b = 1; b <= batches; b++) {
        await runBatch();
        const inUse = await inUseAfterCollection();
        const perCall = Math.round((inUse - start) * MB / (b * calls));
        console.log(
          `${label.padEnd(30)} ${String(b * calls).padStart(9)} ${
            inUse.toFixed(1).padStart(10)
          } MB ${String(perCall).padStart(19)}`,
        );
      }
    }
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

if (import.meta.main) {
  if (typeof (globalThis as { gc?: unknown }).gc !== "function") {
    throw new Error("Run with --v8-flags=--expose-gc: each reading must follow a full collection");
  }
  const [mode, ...counts] = Deno.args;
  if (mode === "growth") await keptAsCallsAddUp(...growthCounts(counts));
  else if (mode === undefined) await bare();
  else throw new Error(`Unknown mode "${mode}": give none, or growth [batches] [calls]`);
}
