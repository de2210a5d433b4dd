/**
 * Issue 47, section 3: a page a grid asks for that nobody asked for before, at a random
 * filter value or cursor, on a 1,000,000-row × 8-column keyed table, against DuckDB's own
 * prepared statement for the same page in process (target: p50 ≤ 2×). One client, so the
 * figures are each request's own cost; service and baseline alternate request by request, so
 * other work on the machine weighs on both alike. The baseline runs on a copy of the
 * service's file taken after its load, the rows read into JavaScript objects.
 *
 * `deno run -A --lock=deno.dev.lock bench/pages.ts [rows] [pages]` (1,000,000 and 300 by
 * default). DuckDB only.
 *
 * @module
 */

import { DuckDBInstance } from "@duckdb/node-api";
import { encodeCursor } from "../src/catalog/filters.ts";
import { ALL_SCOPES, mint, TestServer, uploadForm } from "../tests/helpers/server.ts";
import { createKeyedTable, CSV_HEADER, csvLine } from "./generate.ts";
import { percentile } from "./measure.ts";

const TABLE = "pages";
const rows = Number(Deno.args[0] ?? 1_000_000);
const pages = Number(Deno.args[1] ?? 300);
const WARMUP = 20;

/** A CSV of `count` generated rows. */
function csv(count: number): Uint8Array {
  const lines = [CSV_HEADER];
  for (let i = 0; i < count; i++) lines.push(csvLine(i));
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

const p50 = (samples: number[]) => percentile(Float64Array.from(samples).sort(), 0.5);

const token = await mint({ scope: ALL_SCOPES });
const server = await TestServer.start({ LOG_LEVEL: "error" });
const copy = await Deno.makeTempDir();
try {
  await createKeyedTable(server, token, TABLE);
  const loaded = await server.request("POST", `table/${TABLE}/upload/csv?if_exists=append`, {
    token,
    body: uploadForm(csv(rows), "rows.csv"),
  });
  if (loaded.status !== 200) throw new Error(`The load failed: ${loaded.text}`);
  // A load this size ends with a checkpoint: the file holds every row.
  await Deno.copyFile(`${server.dataDir}/tables.duckdb`, `${copy}/t.duckdb`);
  const instance = await DuckDBInstance.create(`${copy}/t.duckdb`);
  const duckdb = await instance.connect();

  const walk = await server.request("GET", `table/${TABLE}/records?limit=1&after=`, { token });
  const signature = JSON.parse(atob(walk.body.next.replaceAll("-", "+").replaceAll("_", "/")))
    .o as string;
  // Spread over the table, a different value each time, so no page comes from a cache.
  const at = (k: number) => (k * 7_919_993 + 123_455) % rows;
  const kinds = [
    {
      what: "filter: ?qty=eq.<random>&limit=10&count=none",
      path: (k: number) => `records?qty=eq.${at(k) % 1000}&limit=10&count=none`,
      sql: `SELECT * FROM public.${TABLE} WHERE qty = $1 ORDER BY id LIMIT 10`,
      bind: (k: number) => [at(k) % 1000],
    },
    {
      what: "key: ?id=eq.<random>&count=none",
      path: (k: number) => `records?id=eq.${at(k)}&count=none`,
      sql: `SELECT * FROM public.${TABLE} WHERE id = $1 ORDER BY id LIMIT 100`,
      bind: (k: number) => [BigInt(at(k))],
    },
    {
      what: "cursor: ?limit=10&count=none&after=<random id>",
      path: (k: number) =>
        `records?limit=10&count=none&after=${encodeCursor([String(at(k))], signature)}`,
      sql: `SELECT * FROM public.${TABLE} WHERE id > $1 ORDER BY id LIMIT 10`,
      bind: (k: number) => [BigInt(at(k))],
    },
  ];
  console.log(`Pages of a ${rows}-row table, ${pages} each after ${WARMUP} of warm-up (p50):`);
  for (const kind of kinds) {
    const statement = await duckdb.prepare(kind.sql);
    const service: number[] = [];
    const own: number[] = [];
    for (let k = 0; k < pages + WARMUP; k++) {
      // Service and baseline ask for different pages, neither asked before.
      let started = performance.now();
      const answer = await server.request("GET", `table/${TABLE}/${kind.path(2 * k)}`, { token });
      if (answer.status !== 200) throw new Error(`${kind.what}: ${answer.text}`);
      if (k >= WARMUP) service.push(performance.now() - started);
      started = performance.now();
      statement.bind(kind.bind(2 * k + 1));
      (await statement.runAndReadAll()).getRowObjectsJS();
      if (k >= WARMUP) own.push(performance.now() - started);
    }
    const ratio = p50(service) / p50(own);
    console.log(
      `  ${kind.what.padEnd(50)} service ${p50(service).toFixed(2)} ms, DuckDB prepared ` +
        `${p50(own).toFixed(2)} ms: ${ratio.toFixed(2)}× (target ≤ 2×)`,
    );
  }
  const health: number[] = [];
  for (let k = 0; k < 100; k++) {
    const started = performance.now();
    await (await fetch(`${server.base}/healthz`)).text();
    health.push(performance.now() - started);
  }
  console.log(`  for comparison, GET /healthz: ${p50(health).toFixed(2)} ms`);
  duckdb.closeSync();
} finally {
  await server.dispose();
  await Deno.remove(copy, { recursive: true });
}
