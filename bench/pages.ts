/**
 * Pages nobody asked for before (issue 47's grid): a page of 50 records of a keyed table of
 * `rows` rows × 8 columns at a random key (`?id=gte.N`), at a random cursor and at a random
 * value of a column without an index (`?qty=eq.V`), read one at a time, each p50 against the
 * same page read by the engine's own prepared statement (rows into JavaScript): DuckDB in
 * process on a copy of the service's file, PostgreSQL 15 through `npm:pg` over its Unix
 * socket. Target: p50 ≤ 2× the prepared statement's on each engine.
 *
 * Then, for where the time goes, the CPU a read takes each way ({@link CPU_READS} in a row):
 * in the service's process, in the engine's server (PostgreSQL's processes; DuckDB's baseline
 * runs in the bench) and in the bench's own process.
 *
 * The service runs at its defaults, in a process of its own. The pages ask `count=none`, as a
 * grid does for every page after the first (the count is the first page's business,
 * `count=estimated`). The service and its baseline alternate request by request, so other
 * work on the machine weighs on both alike.
 *
 * @module
 */

import { DuckDBInstance, type DuckDBPreparedStatement } from "@duckdb/node-api";
// deno-lint-ignore no-import-prefix -- a tool of benchmarks, kept out of the import map (deno.dev.lock)
import pg from "npm:pg@^8.23.1";
import { encodeCursor } from "../src/catalog/filters.ts";
import { ALL_SCOPES, mint, TestServer, uploadForm } from "../tests/helpers/server.ts";
import { startPostgres } from "../tests/helpers/postgres.ts";
import { createKeyedTable, CSV_HEADER, csvLine } from "./generate.ts";
import { cpuMs, percentile, postgresCpuMs } from "./measure.ts";

const TABLE = "pages";
const LIMIT = 50;
const WARMUP = 30;

/** A kind of page: the service's query string for a random `n`, and the same page's SQL. */
interface Kind {
  readonly what: string;
  readonly query: (n: number) => string;
  readonly sql: string;
  /** The id the page's first record has. */
  readonly first: (n: number) => number;
}

/** The kinds of page measured; a cursor's `after` is made by `cursorAt`. */
function kinds(cursorAt: (id: number) => string): Kind[] {
  const page = (where: string) =>
    `SELECT * FROM public.${TABLE} WHERE ${where} ORDER BY id LIMIT ${LIMIT}`;
  return [
    {
      what: "?id=gte.N",
      query: (n) => `id=gte.${n}`,
      sql: page("id >= $1"),
      first: (n) => n,
    },
    {
      what: "?after=<cursor at N>",
      // A cursor continues after its row: the page begins at N.
      query: (n) => `after=${cursorAt(n - 1)}`,
      sql: page("id > $1 - 1"),
      first: (n) => n,
    },
    {
      what: "?qty=eq.<N mod 1000>",
      query: (n) => `qty=eq.${n % 1000}`,
      sql: `SELECT * FROM public.${TABLE} WHERE qty = $1 % 1000 ORDER BY id LIMIT ${LIMIT}`,
      // The generator's qty is the row's index mod 1000, ids count from 0.
      first: (n) => n % 1000,
    },
  ];
}

/** Runs the engine's own prepared statement of a kind for `n`; answers the first id. */
type Baseline = (kind: Kind, n: number) => Promise<number>;

/** One kind's p50s, in milliseconds, and the CPU a read of each way takes. */
interface Figure {
  readonly what: string;
  readonly service: number;
  readonly baseline: number;
  readonly cpu: { readonly service: Cpu; readonly baseline: Cpu };
}

/** CPU milliseconds a read takes: in the service, in the engine's server, in the bench. */
interface Cpu {
  readonly service: number;
  readonly engine: number;
  readonly bench: number;
}

/** Reads of a kind in a row for its CPU figures, after the alternating ones. */
const CPU_READS = 300;

/**
 * Each kind at `reads` random values, the service and the baseline alternating request by
 * request, so other work on the machine weighs on both alike.
 */
async function measure(
  server: TestServer,
  token: string,
  rows: number,
  reads: number,
  baseline: Baseline,
  engineCpuMs: () => number,
): Promise<Figure[]> {
  const walk = await server.request("GET", `table/${TABLE}/records?limit=1&after=`, { token });
  const signature = JSON.parse(atob(walk.body.next.replaceAll("-", "+").replaceAll("_", "/")))
    .o as string;
  const base = `${server.base}/api/v1/table/${TABLE}/records?limit=${LIMIT}&count=none`;
  const figures: Figure[] = [];
  // From 1, so a cursor at n - 1 exists.
  const random = () => 1 + Math.floor(Math.random() * (rows - 1));
  for (const kind of kinds((id) => encodeCursor([String(id)], signature))) {
    const read = async (n: number) => {
      const answer = await fetch(`${base}&${kind.query(n)}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const text = await answer.text();
      if (answer.status !== 200 || !text.startsWith(`{"records":[{"id":${kind.first(n)},`)) {
        throw new Error(`${kind.what} at ${n} answered ${answer.status}: ${text.slice(0, 200)}`);
      }
    };
    const own = async (n: number) => {
      if (await baseline(kind, n) !== kind.first(n)) {
        throw new Error(`The baseline of ${kind.what} at ${n} differs`);
      }
    };
    const service: number[] = [];
    const prepared: number[] = [];
    for (let k = 0; k < reads + WARMUP; k++) {
      const n = random();
      let started = performance.now();
      await read(n);
      if (k >= WARMUP) service.push(performance.now() - started);
      started = performance.now();
      await own(n);
      if (k >= WARMUP) prepared.push(performance.now() - started);
    }
    // CPU time is counted in ticks of 10 ms: many reads in a row each way.
    const cpu = async (work: (n: number) => Promise<void>): Promise<Cpu> => {
      const before = [cpuMs(server.pid), engineCpuMs(), cpuMs("self")];
      for (let k = 0; k < CPU_READS; k++) await work(random());
      const [service, engine, bench] = [cpuMs(server.pid), engineCpuMs(), cpuMs("self")]
        .map((after, i) => (after - before[i]!) / CPU_READS) as [number, number, number];
      return { service, engine, bench };
    };
    figures.push({
      what: kind.what,
      service: p50(service),
      baseline: p50(prepared),
      cpu: { service: await cpu(read), baseline: await cpu(own) },
    });
  }
  return figures;
}

function p50(samples: readonly number[]): number {
  return percentile(Float64Array.from(samples).sort(), 0.5);
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

async function duckdbFigures(rows: number, reads: number, token: string): Promise<Figure[]> {
  // The service at its own defaults: a thread per core, half the memory.
  const server = await TestServer.spawn({
    LOG_LEVEL: "error",
    DUCKDB_THREADS: String(navigator.hardwareConcurrency),
    DUCKDB_MEMORY_LIMIT: "",
  });
  const copy = await Deno.makeTempDir({ prefix: "table-service-bench-" });
  try {
    await load(server, token, rows);
    // A load this size ends with a checkpoint: the file holds every row, and a copy of it is
    // the baseline's, which DuckDB lets a second process open while the service has its own.
    await Deno.copyFile(`${server.dataDir}/tables.duckdb`, `${copy}/pages.duckdb`);
    const instance = await DuckDBInstance.create(`${copy}/pages.duckdb`);
    const connection = await instance.connect();
    const statements = new Map<string, DuckDBPreparedStatement>();
    try {
      return await measure(server, token, rows, reads, async (kind, n) => {
        let statement = statements.get(kind.sql);
        if (!statement) statements.set(kind.sql, statement = await connection.prepare(kind.sql));
        statement.bindBigInt(1, BigInt(n));
        return Number((await statement.runAndReadAll()).getRowObjectsJS()[0]?.id);
      }, () => 0);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  } finally {
    await server.dispose();
    await Deno.remove(copy, { recursive: true }).catch(() => {});
  }
}

async function postgresFigures(
  rows: number,
  reads: number,
  token: string,
): Promise<Figure[] | string> {
  const dir = await Deno.makeTempDir({ prefix: "table-service-bench-" });
  await Deno.chmod(dir, 0o755);
  const postgres = await startPostgres(`${dir}/pg`, "bench");
  if (typeof postgres === "string") return postgres;
  let server: TestServer | undefined;
  try {
    await postgres.sql("CREATE DATABASE pages");
    const url = new URL(postgres.url);
    url.pathname = "/pages";
    server = await TestServer.spawn({ LOG_LEVEL: "error", DATABASE_URL: url.toString() });
    await load(server, token, rows);
    const own = new pg.Client({ connectionString: url.toString() });
    await own.connect();
    // The planner's statistics, as a table long in use has them.
    await own.query(`VACUUM ANALYZE public.${TABLE}`);
    try {
      const names = new Map<string, string>();
      return await measure(server, token, rows, reads, async (kind, n) => {
        const name = names.get(kind.sql) ?? `page${names.size}`;
        names.set(kind.sql, name);
        const { rows } = await own.query({ name, text: kind.sql, values: [n] });
        return Number(rows[0]?.id);
      }, postgresCpuMs);
    } finally {
      await own.end();
    }
  } finally {
    await server?.dispose();
    await postgres.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Runs the pages benchmark on the engines named and prints each p50 against its baseline. */
export async function pages(
  rows = 1_000_000,
  reads = 300,
  engines: readonly string[] = ["duckdb", "postgres"],
): Promise<void> {
  const token = await mint({ scope: ALL_SCOPES, expiresIn: 3_600 });
  console.log(
    `\nPages of ${LIMIT} of ${rows.toLocaleString("en")} rows × 8 columns at random values, ` +
      `${reads} reads of each kind after ${WARMUP} of warm-up, the service and the engine's ` +
      "own prepared statement alternating",
  );
  const all: [string, Figure[]][] = [];
  if (engines.includes("duckdb")) all.push(["DuckDB", await duckdbFigures(rows, reads, token)]);
  if (engines.includes("postgres")) {
    const figures = await postgresFigures(rows, reads, token);
    if (typeof figures === "string") console.log(`PostgreSQL: not measured: ${figures}`);
    else all.push(["PostgreSQL 15", figures]);
  }
  for (const [engine, figures] of all) {
    console.log(engine);
    for (const f of figures) {
      const ratio = f.service / f.baseline;
      console.log(
        `  ${f.what.padEnd(24)} service p50 ${f.service.toFixed(2)} ms, prepared statement ` +
          `${f.baseline.toFixed(2)} ms: ${ratio.toFixed(2)}× (target ≤ 2×) ${
            ratio <= 2 ? "PASS" : "FAIL"
          }`,
      );
      const cpu = ({ service, engine, bench }: Cpu) =>
        `${(service + engine + bench).toFixed(2)} ms (service ${service.toFixed(2)}, ` +
        `engine's server ${engine.toFixed(2)}, bench ${bench.toFixed(2)})`;
      console.log(
        `  ${"".padEnd(24)} CPU a read, ${CPU_READS} in a row each way: service ` +
          `${cpu(f.cpu.service)}; prepared statement ${cpu(f.cpu.baseline)}`,
      );
    }
  }
}
