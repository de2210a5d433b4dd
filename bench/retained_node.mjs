/**
 * The part of `deno task bench retained` that runs under Node (`node --expose-gc`), with
 * the very DuckDB bindings the service uses (resolved through the project's node_modules).
 *
 * It repeats two of the bare calls that keep memory under Deno, to tell which of it Deno's
 * Node-API keeps and which DuckDB keeps: what grows under Node as well is DuckDB's. Node
 * has no FFI to read glibc's figures, so this reads the process's RSS after collecting all
 * garbage: coarser than the Deno readings (it moves by megabytes as allocators return
 * pages), hence larger batches. The same page with late materialization off is left out: it
 * sorts whole rows, 8 ms a call here, too slow for batches this size.
 *
 * Arguments: calls a batch (20,000) and measured batches (3). Each call first runs one batch
 * unmeasured, to warm up.
 *
 * @module
 */

import { DuckDBInstance } from "@duckdb/node-api";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PAGE, WIDE_TABLE } from "./retained_queries.mjs";

const calls = Number(process.argv[2] ?? 20_000);
const batches = Number(process.argv[3] ?? 3);

/** RSS in KiB after collecting all garbage and letting finalizers run. */
async function settledRss() {
  for (let round = 0; round < 5; round++) {
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return process.memoryUsage().rss / 1024;
}

const dir = mkdtempSync(join(tmpdir(), "bench-retained-node-"));
let instance;
let connection;
try {
  instance = await DuckDBInstance.create(join(dir, "bare.duckdb"));
  connection = await instance.connect();
  await connection.run(WIDE_TABLE);
  const cases = [
    ['connection.run("SELECT 42")', () => connection.run("SELECT 42")],
    ["connection.run(top 10 of 200,000 rows)", () => connection.run(PAGE)],
  ];
  console.log(`\nThe same under Node ${process.version}, RSS after a full collection`);
  console.log(
    `call                                      bytes of RSS per call (${batches} batches of ${calls})`,
  );
  for (const [label, call] of cases) {
    const started = performance.now();
    for (let i = 0; i < calls; i++) await call();
    const ms = (performance.now() - started) / calls;
    let before = await settledRss();
    const kept = [];
    for (let b = 0; b < batches; b++) {
      for (let i = 0; i < calls; i++) await call();
      const after = await settledRss();
      kept.push(`${Math.round((after - before) * 1024 / calls)}`.padStart(7));
      before = after;
    }
    console.log(`${label.padEnd(40)} ${kept.join(" ")}   (${ms.toFixed(2)} ms a call)`);
  }
} finally {
  connection?.closeSync();
  instance?.closeSync();
  rmSync(dir, { recursive: true, force: true });
}
