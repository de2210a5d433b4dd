/**
 * Pages nobody asked for before (issue 47's grid): a page of 50 records of a keyed table of
 * `rows` rows × 8 columns at a random filter value (`?id=gte.N`) and at a random cursor
 * (`?after=<cursor at N>`), read one at a time, each p50 against the same page read by the
 * engine's own prepared statement (`SELECT * … WHERE id >= $1 ORDER BY id LIMIT 50`, rows
 * into JavaScript): DuckDB in process on the service's own file, PostgreSQL 15 through
 * `npm:pg` over its Unix socket. Target: p50 ≤ 2× the prepared statement's on each engine.
 *
 * The pages ask `count=none`, as a grid does for every page after the first (the count is
 * the first page's business, `count=estimated`). Rounds alternate the service and its
 * baseline on the same sequence of random values; the median of the rounds' p50s counts.
 *
 * @module
 */

import { DuckDBInstance } from "@duckdb/node-api";
// deno-lint-ignore no-import-prefix -- a tool of benchmarks, kept out of the import map (deno.dev.lock)
import pg from "npm:pg@^8.23.1";
import { encodeCursor } from "../src/catalog/filters.ts";
import { ALL_SCOPES, mint, TestServer, uploadForm } from "../tests/helpers/server.ts";
import { startPostgres } from "../tests/helpers/postgres.ts";
import { createKeyedTable, CSV_HEADER, csvLine } from "./generate.ts";
import { median } from "./analytics_measure.ts";
import { percentile } from "./measure.ts";

const TABLE = "pages";
const LIMIT = 50;
const WARMUP = 30;
const ROUNDS = 3;

/** The same page as the service's, by the engine's own prepared statement. */
const PREPARED = `SELECT * FROM public.${TABLE} WHERE id >= $1 ORDER BY id LIMIT ${LIMIT}`;

/** `count` random ids in [0, rows), the same sequence for the service and its baseline. */
function randomIds(count: number, rows: number): number[] {
  return Array.from({ length: count }, () => Math.floor(Math.random() * rows));
}

/** The p50, in milliseconds, of `work` over `ids` after {@link WARMUP} of them. */
async function p50(ids: readonly number[], work: (id: number) => Promise<void>): Promise<number> {
  const samples: number[] = [];
  for (const [k, id] of ids.entries()) {
    const started = performance.now();
    await work(id);
    if (k >= WARMUP) samples.push(performance.now() - started);
  }
  return percentile(Float64Array.from(samples).sort(), 0.5);
}

/** Reads of the service: by filter value, and by a cursor naming the same id. */
interface ServiceReads {
  filter(id: number): Promise<void>;
  cursor(id: number): Promise<void>;
}

async function serviceReads(server: TestServer, token: string): Promise<ServiceReads> {
  const base = `${server.base}/api/v1/table/${TABLE}/records?limit=${LIMIT}&count=none`;
  const walk = await server.request("GET", `table/${TABLE}/records?limit=1&after=`, { token });
  const signature = JSON.parse(atob(walk.body.next.replaceAll("-", "+").replaceAll("_", "/")))
    .o as string;
  const read = async (url: string, id: number) => {
    const answer = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const text = await answer.text();
    if (answer.status !== 200) throw new Error(`${url} answered ${answer.status}: ${text}`);
    // The first record is the one asked for: every id exists, the key is dense.
    if (!text.includes(`"id":${id},`)) throw new Error(`${url} did not answer id ${id}`);
  };
  return {
    filter: (id) => read(`${base}&id=gte.${id}`, id),
    // A cursor continues after its row: the page begins at the next id.
    cursor: (id) => read(`${base}&after=${encodeCursor([String(id - 1)], signature)}`, id),
  };
}

async function load(server: TestServer, token: string, rows: number): Promise<void> {
  await createKeyedTable(server, token, TABLE);
  const lines = [CSV_HEADER];
  for (let i = 0; i < rows; i++) lines.push(csvLine(i));
  const answer = await server.request("POST", `table/${TABLE}/upload/csv?if_exists=append`, {
    token,
    body: uploadForm(new TextEncoder().encode(`${lines.join("\n")}\n`), "rows.csv"),
  });
  if (answer.status !== 200 || answer.body.inserted !== rows) {
    throw new Error(`Cannot load ${TABLE}: ${answer.status} ${answer.text}`);
  }
}

/** One engine's figures: the median of the rounds' p50s, in milliseconds. */
interface Figures {
  readonly engine: string;
  readonly filter: number;
  readonly cursor: number;
  readonly prepared: number;
}

async function duckdbFigures(rows: number, reads: number, token: string): Promise<Figures> {
  // The service at its own defaults: a thread per core, half the memory.
  const server = await TestServer.spawn({
    LOG_LEVEL: "error",
    DUCKDB_THREADS: String(navigator.hardwareConcurrency),
    DUCKDB_MEMORY_LIMIT: "",
  });
  try {
    await load(server, token, rows);
    const filter: number[] = [];
    const cursor: number[] = [];
    const prepared: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const ids = randomIds(reads + WARMUP, rows);
      const service = await serviceReads(server, token);
      filter.push(await p50(ids, service.filter));
      cursor.push(await p50(ids, service.cursor));
      // DuckDB lets one process have the file: the service steps aside for its baseline.
      await server.stop();
      const instance = await DuckDBInstance.create(`${server.dataDir}/tables.duckdb`);
      try {
        const connection = await instance.connect();
        const statement = await connection.prepare(PREPARED);
        prepared.push(
          await p50(ids, async (id) => {
            statement.bindBigInt(1, BigInt(id));
            const [first] = (await statement.runAndReadAll()).getRowObjectsJS();
            if (Number(first?.id) !== id) throw new Error(`DuckDB did not answer id ${id}`);
          }),
        );
        connection.closeSync();
      } finally {
        instance.closeSync();
      }
      await server.restart();
    }
    return {
      engine: "DuckDB",
      filter: median(filter),
      cursor: median(cursor),
      prepared: median(prepared),
    };
  } finally {
    await server.dispose();
  }
}

async function postgresFigures(
  rows: number,
  reads: number,
  token: string,
): Promise<Figures | string> {
  const dir = await Deno.makeTempDir({ prefix: "table-service-bench-" });
  await Deno.chmod(dir, 0o755);
  const postgres = await startPostgres(`${dir}/pg`, "bench");
  if (typeof postgres === "string") return postgres;
  let server: TestServer | undefined;
  const client = new pg.Client({ connectionString: postgres.url });
  try {
    await postgres.sql("CREATE DATABASE pages");
    const url = new URL(postgres.url);
    url.pathname = "/pages";
    server = await TestServer.spawn({ LOG_LEVEL: "error", DATABASE_URL: url.toString() });
    await load(server, token, rows);
    const own = new pg.Client({ connectionString: url.toString() });
    await own.connect();
    const filter: number[] = [];
    const cursor: number[] = [];
    const prepared: number[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const ids = randomIds(reads + WARMUP, rows);
        const service = await serviceReads(server, token);
        filter.push(await p50(ids, service.filter));
        cursor.push(await p50(ids, service.cursor));
        prepared.push(
          await p50(ids, async (id) => {
            const { rows } = await own.query({ name: "page", text: PREPARED, values: [id] });
            if (Number(rows[0]?.id) !== id) throw new Error(`PostgreSQL did not answer id ${id}`);
          }),
        );
      }
    } finally {
      await own.end();
    }
    return {
      engine: "PostgreSQL 15",
      filter: median(filter),
      cursor: median(cursor),
      prepared: median(prepared),
    };
  } finally {
    await server?.dispose();
    await client.end().catch(() => {});
    await postgres.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Runs the pages benchmark on both engines and prints each p50 against its baseline. */
export async function pages(
  rows = 1_000_000,
  reads = 300,
  engines: readonly string[] = ["duckdb", "postgres"],
): Promise<void> {
  const token = await mint({ scope: ALL_SCOPES, expiresIn: 3_600 });
  console.log(
    `\nPages of ${LIMIT} of ${rows.toLocaleString("en")} rows × 8 columns at random ids, ` +
      `${reads} reads after ${WARMUP} of warm-up, ${ROUNDS} rounds (the median of their p50s)`,
  );
  const all: Figures[] = [];
  if (engines.includes("duckdb")) all.push(await duckdbFigures(rows, reads, token));
  if (engines.includes("postgres")) {
    const postgres = await postgresFigures(rows, reads, token);
    if (typeof postgres === "string") console.log(`PostgreSQL: not measured: ${postgres}`);
    else all.push(postgres);
  }
  for (const f of all) {
    console.log(`${f.engine}: prepared statement p50 ${f.prepared.toFixed(2)} ms`);
    for (const [what, ms] of [["?id=gte.N", f.filter], ["?after=<cursor>", f.cursor]] as const) {
      const ratio = ms / f.prepared;
      console.log(
        `  service ${what.padEnd(16)} p50 ${ms.toFixed(2)} ms = ${ratio.toFixed(2)}× ` +
          `(target ≤ 2×) ${ratio <= 2 ? "PASS" : "FAIL"}`,
      );
    }
  }
}
