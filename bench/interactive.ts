/**
 * Interactive reads: pages of a 1,000,000-row × 8-column keyed table under 16 connections,
 * each figure against a baseline measured in the same run.
 *
 * 1. The first page (`GET …/records?limit=10`, default order, `count=exact`) against
 *    `GET /table/{name}`, which answers from the description cache: p50 ≤ 5 ms and ≥ 0.5× its
 *    requests/s.
 * 2. A page filtered on the key (`id=gt.N`) and a cursor page deep in the table, against the
 *    first page's p50 (within 2×): once the same page over and over (what a client clicking
 *    back and forth asks), once a different page every request.
 * 3. `GET …/records?limit=10000`, rows/s against DuckDB producing the same JSON text in
 *    process, from the same file, at the same concurrency (≥ 0.5×).
 * 4. The first page while a 1,000,000-row CSV upload runs into another table: p99 ≤ 100 ms.
 *
 * autocannon runs inside this process, so it shares the 2 cores with the service.
 *
 * @module
 */

// @ts-types="npm:@types/autocannon@^7.12.7"
// deno-lint-ignore no-import-prefix -- a tool of benchmarks, kept out of the import map (deno.dev.lock)
import autocannon from "npm:autocannon@^9.0.0";
import { DuckDBInstance } from "@duckdb/node-api";
import { encodeCursor } from "../src/catalog/filters.ts";
import { jsonObject } from "../src/store/duckdb/values.ts";
import { ALL_SCOPES, mint, TestServer, uploadForm } from "../tests/helpers/server.ts";
import { COLUMNS, createKeyedTable, CSV_HEADER, csvLine } from "./generate.ts";
import { percentile } from "./measure.ts";

const TABLE = "interactive";
const OTHER = "interactive_load";
const ROWS = 1_000_000;
const CONNECTIONS = 16;
const WARMUP_SECONDS = 3;
const BIG_PAGE = 10_000;

/** What one run measured; latencies in milliseconds. */
interface Run {
  readonly label: string;
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly answered: number;
  readonly failed: number;
}

function summary(label: string, latencies: number[], seconds: number, failed: number): Run {
  const sorted = Float64Array.from(latencies).sort();
  return {
    label,
    requestsPerSecond: sorted.length / seconds,
    p50: sorted.length ? percentile(sorted, 0.5) : NaN,
    p99: sorted.length ? percentile(sorted, 0.99) : NaN,
    answered: sorted.length,
    failed,
  };
}

/**
 * Drives `path()` (a fresh path per request when it varies) at {@link CONNECTIONS} for
 * `seconds`, or until `until` settles.
 */
function drive(
  server: TestServer,
  token: string,
  label: string,
  path: () => string,
  seconds: number,
  until?: Promise<unknown>,
): Promise<Run> {
  const latencies: number[] = [];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const instance = autocannon({
      url: server.base,
      connections: CONNECTIONS,
      duration: seconds,
      headers: { authorization: `Bearer ${token}` },
      requests: [{ method: "GET", setupRequest: (request) => ({ ...request, path: path() }) }],
    }, (error, result) => {
      if (error) return reject(error);
      const elapsed = until ? (performance.now() - started) / 1000 : result.duration;
      resolve(summary(label, latencies, elapsed, result.non2xx + result.errors));
    });
    instance.on("response", (_client, status, _bytes, milliseconds) => {
      if (status === 200) latencies.push(milliseconds);
    });
    until?.finally(() => instance.stop());
  });
}

async function measured(
  server: TestServer,
  token: string,
  label: string,
  path: () => string,
  seconds: number,
): Promise<Run> {
  await drive(server, token, `warm-up: ${label}`, path, WARMUP_SECONDS);
  return await drive(server, token, label, path, seconds);
}

/** `count` rows of the bench's generator as CSV, ids from `first`. */
function csv(count: number, first = 0): Uint8Array {
  const lines = [CSV_HEADER];
  for (let i = 0; i < count; i++) lines.push(csvLine(i, first + i));
  return new TextEncoder().encode(`${lines.join("\n")}\n`);
}

async function upload(server: TestServer, token: string, table: string, body: Uint8Array) {
  const answer = await server.request("POST", `table/${table}/upload/csv?if_exists=append`, {
    token,
    body: uploadForm(body, "rows.csv"),
  });
  if (answer.status !== 200 || answer.body.inserted !== ROWS) {
    throw new Error(`Cannot load ${table}: ${answer.status} ${answer.text}`);
  }
}

/** A random integer in [from, to). */
function between(from: number, to: number): number {
  return from + Math.floor(Math.random() * (to - from));
}

/**
 * DuckDB in process producing the JSON text of the service's first page of `limit` rows on
 * `file`, at {@link CONNECTIONS} concurrent connections for `seconds`; the text is returned
 * to compare with the service's.
 */
async function inProcess(
  file: string,
  limit: number,
  seconds: number,
): Promise<{ run: Run; json: string }> {
  const instance = await DuckDBInstance.create(file);
  try {
    const columns = COLUMNS.map((c) => ({ name: c.name, type: c.type }));
    const sql = `SELECT string_agg(${jsonObject(columns)}, ',' ORDER BY id) AS json FROM (
      SELECT * FROM public.${TABLE} ORDER BY id LIMIT ${limit}) AS page`;
    const connections = await Promise.all(
      Array.from({ length: CONNECTIONS }, () => instance.connect()),
    );
    await connections[0]!.run("SET TimeZone='UTC'");
    const first = await connections[0]!.runAndReadAll(sql);
    const json = `[${first.getRowObjectsJS()[0]?.json ?? ""}]`;
    const work = async (stop: number, latencies: number[]) => {
      await Promise.all(connections.map(async (connection) => {
        while (performance.now() < stop) {
          const started = performance.now();
          const text = (await connection.runAndReadAll(sql)).getRowObjectsJS()[0]?.json;
          // The array's brackets, as the service adds them.
          if (`[${text}]`.length !== json.length) throw new Error("The in-process JSON changed");
          latencies.push(performance.now() - started);
        }
      }));
    };
    await work(performance.now() + WARMUP_SECONDS * 1000, []);
    const latencies: number[] = [];
    await work(performance.now() + seconds * 1000, latencies);
    for (const connection of connections) connection.closeSync();
    return {
      run: summary(`in process: DuckDB, the same JSON, limit=${limit}`, latencies, seconds, 0),
      json,
    };
  } finally {
    instance.closeSync();
  }
}

function verdict(pass: boolean): string {
  return pass ? "PASS" : "FAIL";
}

function print(runs: readonly Run[]): void {
  console.log(
    "run                                                        req/s    p50 ms    p99 ms  failed",
  );
  for (const r of runs) {
    console.log(
      `${r.label.padEnd(56)} ${r.requestsPerSecond.toFixed(0).padStart(7)} ${
        r.p50.toFixed(2).padStart(9)
      } ${r.p99.toFixed(2).padStart(9)} ${String(r.failed).padStart(7)}`,
    );
  }
}

/** Runs the interactive-read benchmark and prints each target against its baseline. */
export async function interactive(seconds = 10): Promise<void> {
  const token = await mint({ scope: ALL_SCOPES, expiresIn: 3_600 });
  console.log(
    `\nInteractive reads: ${ROWS.toLocaleString("en")} rows × ${COLUMNS.length} columns keyed ` +
      `by id (loaded in key order), ${CONNECTIONS} connections, ${seconds} s per run after ` +
      `${WARMUP_SECONDS} s warm-up`,
  );
  const server = await TestServer.spawn({ LOG_LEVEL: "error" });
  let disposed = false;
  try {
    await createKeyedTable(server, token, TABLE);
    await createKeyedTable(server, token, OTHER);
    await upload(server, token, TABLE, csv(ROWS));
    const base = `/api/v1/table/${TABLE}`;

    // A real cursor tells the order it is bound to; others for any key are made the same way.
    const walk = await server.request("GET", `table/${TABLE}/records?limit=1&after=`, { token });
    const signature = JSON.parse(atob(walk.body.next.replaceAll("-", "+").replaceAll("_", "/")))
      .o as string;
    const cursorAt = (id: number) => encodeCursor([String(id)], signature);
    const deep = Math.floor(ROWS * 0.9);

    const table = await measured(server, token, "GET /table/{name}", () => base, seconds);
    const first = await measured(
      server,
      token,
      "first page: GET /records?limit=10",
      () => `${base}/records?limit=10`,
      seconds,
    );
    const filtered = await measured(
      server,
      token,
      "filtered: ?id=gt.500000&limit=10",
      () => `${base}/records?id=gt.500000&limit=10`,
      seconds,
    );
    const cursor = await measured(
      server,
      token,
      "deep cursor: ?limit=10&after=<id 900000>",
      () => `${base}/records?limit=10&after=${cursorAt(deep)}`,
      seconds,
    );
    const filteredEach = await measured(
      server,
      token,
      "filtered, N random: ?id=gt.N&limit=10",
      () => `${base}/records?id=gt.${between(0, ROWS)}&limit=10`,
      seconds,
    );
    const cursorEach = await measured(
      server,
      token,
      "deep cursor, random in the last half",
      () => `${base}/records?limit=10&after=${cursorAt(between(ROWS / 2, ROWS))}`,
      seconds,
    );
    const big = await measured(
      server,
      token,
      `GET /records?limit=${BIG_PAGE}`,
      () => `${base}/records?limit=${BIG_PAGE}`,
      seconds,
    );
    const bigPage = await server.request("GET", `table/${TABLE}/records?limit=${BIG_PAGE}`, {
      token,
    });

    // Target 4: the first page while a million rows load into another table.
    const rows = csv(ROWS, 0);
    const loadStarted = performance.now();
    const loading = upload(server, token, OTHER, rows);
    loading.catch(() => {});
    const duringLoad = await drive(
      server,
      token,
      "first page during a 1M-row CSV upload",
      () => `${base}/records?limit=10`,
      600,
      loading.catch(() => {}),
    );
    await loading;
    const loadSeconds = (performance.now() - loadStarted) / 1000;

    await server.stop();
    const own = await inProcess(`${server.dataDir}/tables.duckdb`, BIG_PAGE, seconds);
    await server.dispose();
    disposed = true;
    const same = bigPage.status === 200 && JSON.stringify(bigPage.body.records) ===
        JSON.stringify(JSON.parse(own.json));

    print([table, first, filtered, cursor, filteredEach, cursorEach, big, own.run, duringLoad]);
    console.log(`the ${ROWS.toLocaleString("en")}-row upload took ${loadSeconds.toFixed(1)} s`);
    const ratio = first.requestsPerSecond / table.requestsPerSecond;
    console.log(
      `1. first page p50 ${first.p50.toFixed(2)} ms (target ≤ 5) ${verdict(first.p50 <= 5)}; ` +
        `req/s ÷ GET /table req/s ${ratio.toFixed(2)} (target ≥ 0.5) ${verdict(ratio >= 0.5)}`,
    );
    for (const run of [filtered, cursor, filteredEach, cursorEach]) {
      const r = run.p50 / first.p50;
      console.log(
        `2. ${run.label}: p50 ÷ first page p50 ${r.toFixed(2)} (target ≤ 2) ${verdict(r <= 2)}`,
      );
    }
    const rowsRatio = big.requestsPerSecond / own.run.requestsPerSecond;
    console.log(
      `3. limit=${BIG_PAGE}: ${(big.requestsPerSecond * BIG_PAGE).toFixed(0)} rows/s ÷ in ` +
        `process ${(own.run.requestsPerSecond * BIG_PAGE).toFixed(0)} rows/s = ` +
        `${rowsRatio.toFixed(2)} (target ≥ 0.5) ${verdict(rowsRatio >= 0.5)}; the same records ` +
        `as in process: ${same ? "yes" : "NO"}`,
    );
    console.log(
      `4. first page p99 during the load ${duringLoad.p99.toFixed(2)} ms over ` +
        `${duringLoad.answered} pages (target ≤ 100) ${verdict(duringLoad.p99 <= 100)}`,
    );
  } finally {
    if (!disposed) await server.dispose();
  }
}
