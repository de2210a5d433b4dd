/**
 * Load and soak: autocannon on loopback at fixed concurrency against the service (inserts of
 * 10 rows per request, reads) and, in the same run, against a baseline — a minimal Hono app
 * on Deno that only verifies the JWT — then a mixed soak watching the service's memory.
 * Inserts and the baseline are measured at two fixed concurrencies, the given one and 64.
 * A warm run first appends 10 million rows by CSV upload and reads pages, so that its soak
 * runs on a large table and past the steepest of the page query's growth. It does not fill
 * DuckDB's cache of table data to its limit: each upload leaves it where the upload's own work
 * evicted it to (the count after each is printed), and an export of the whole table empties it.
 *
 * autocannon runs inside this process (it works under Deno's Node compatibility), so the
 * generator shares the machine's cores with the server it drives, for both servers alike.
 *
 * @module
 */

// @ts-types="npm:@types/autocannon@^7.12.7"
// deno-lint-ignore no-import-prefix -- a tool of benchmarks, kept out of the import map (deno.dev.lock)
import autocannon from "npm:autocannon@^9.0.0";
import { samples, value } from "../tests/helpers/metrics.ts";
import { ALL_SCOPES, mint, spawn, TestServer, uploadForm } from "../tests/helpers/server.ts";
import { allocators, type ServiceMemory } from "./allocators.ts";
import { COLUMNS, createKeyedTable, CSV_HEADER, csvLine, row } from "./generate.ts";
import { memory, percentile } from "./measure.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const TABLE = "load_bench";
const ROWS_PER_INSERT = 10;
/** Connections when none are asked for; the concurrency test uses 16 clients too. */
const CONNECTIONS = 16;
/**
 * Inserts (and their baseline) are measured at this many connections too: the group commit
 * shares a transaction among the inserts that wait, so its throughput depends on how many do.
 */
const MORE_CONNECTIONS = 64;
/** The service's settings a run takes from the bench's environment. */
const PASSED_THROUGH = ["MEMORY_TRIM_SECONDS", "DUCKDB_MEMORY_LIMIT"];

/** Length of each measured run (shortened to the soak's length when that is shorter). */
const MEASURE_SECONDS = 20;
/**
 * Inserts and their baseline are measured in this many alternating rounds that share the
 * measured time: on shared cores the machine's speed drifts over minutes, and a baseline
 * taken minutes before the service would carry that drift into the ratio.
 */
const ROUNDS = 4;
/** Pause before each round, for the work the last one cut off to finish. */
const PAUSE_MS = 1_000;
const WARMUP_SECONDS = 5;
/**
 * The soak's own mix runs this long before its first RSS reading. The phase before it
 * (inserts alone, reads alone, or a warm run's fill and page reads) leaves the service in
 * another state: V8's young generation and glibc's heaps sized for that phase, pages the
 * memory trim gave back that the mix then faults in again. In a warm run at 8fdaa5b two
 * thirds of the growth came in the first 30 s.
 */
const SOAK_RAMP_SECONDS = 60;
const RSS_SAMPLE_MS = 5_000;
/** How often the soak's RSS is kept for the series it prints (a multiple of the above). */
const RSS_SERIES_MS = 30_000;
/**
 * CSV uploads, and rows per upload, filling DuckDB's cache before a warm soak. DuckDB's own
 * count reaches about 100 MB within 3 million rows of this table and then swings by ±15 MB
 * as it evicts, creeping up about 5 MB per million rows.
 */
const FILL_UPLOADS = 10;
const FILL_ROWS = 1_000_000;
/** Ids of the rows filled in start here, far above any the inserts reach. */
const FILL_FIRST_ID = 1e12;
/**
 * Seconds of page reads after the fill, before a warm soak. The memory DuckDB's page query
 * keeps grows fastest over its first tens of thousands of calls and then slows (`bench
 * retained` shows it under Deno and Node): a service that has run a while is past the
 * steepest of it. 150 s reads about 35,000 pages here, not all of that growth.
 */
const WARM_READ_SECONDS = 150;

/** One request a connection sends, in turn with the others of its load. */
interface Step {
  readonly method: "GET" | "POST";
  readonly path: string;
  /** Builds a fresh body for every request. */
  readonly body?: () => string;
}

/** A fixed-concurrency load of one kind of request (or a cycle of kinds). */
interface Load {
  readonly label: string;
  readonly base: string;
  readonly token: string;
  readonly connections: number;
  readonly seconds: number;
  readonly steps: readonly Step[];
}

/** What one load measured; latencies in milliseconds. */
interface Measurement {
  readonly label: string;
  readonly connections: number;
  readonly seconds: number;
  readonly answered: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly serverErrors: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** Every answer's latency, sorted. */
  readonly latencies: Float64Array;
}

/** Bodies of 10 distinct rows each; ids never repeat, so inserts never conflict. */
class Batches {
  issued = 0;

  next(): string {
    const first = this.issued++ * ROWS_PER_INSERT;
    const rows = [];
    for (let i = first; i < first + ROWS_PER_INSERT; i++) rows.push(row(i));
    return JSON.stringify(rows);
  }
}

/** Runs one load to its end with autocannon and summarises it. */
function drive(load: Load): Promise<Measurement> {
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon({
      url: load.base,
      connections: load.connections,
      duration: load.seconds,
      headers: { authorization: `Bearer ${load.token}`, "content-type": "application/json" },
      requests: load.steps.map(({ method, path, body }) =>
        body ? { method, path, setupRequest: (request) => ({ ...request, body: body() }) } : {
          method,
          path,
        }
      ),
    }, (error, result) => {
      if (error) return reject(error);
      resolve(measurement({
        label: load.label,
        connections: load.connections,
        seconds: result.duration,
        ok: result["2xx"],
        non2xx: result.non2xx,
        serverErrors: result["5xx"],
        errors: result.errors,
      }, Float64Array.from(latencies).sort()));
    });
    instance.on("response", (_client, _status, _bytes, milliseconds) => {
      latencies.push(milliseconds);
    });
  });
}

/** The baseline server in a child process, started and driven exactly like the service. */
function startBaseline(): Promise<TestServer> {
  return TestServer.spawn({}, undefined, (env) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-env=AUTH_JWT_SECRET",
        "--allow-net=127.0.0.1",
        `${ROOT}bench/baseline_server.ts`,
      ],
      cwd: ROOT,
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).spawn());
}

async function warmUp(load: Load, seconds = WARMUP_SECONDS): Promise<Measurement> {
  return await drive({ ...load, label: `warm-up: ${load.label}`, seconds });
}

/** What a run counted, and what follows from its latencies (sorted). */
function measurement(
  counted: Omit<Measurement, "answered" | "requestsPerSecond" | "p50" | "p99" | "latencies">,
  latencies: Float64Array,
): Measurement {
  return {
    ...counted,
    answered: latencies.length,
    requestsPerSecond: latencies.length / counted.seconds,
    p50: latencies.length ? percentile(latencies, 0.5) : NaN,
    p99: latencies.length ? percentile(latencies, 0.99) : NaN,
    latencies,
  };
}

/** The runs of several rounds as one: their answers, time and latencies together. */
function combined(runs: readonly Measurement[]): Measurement {
  const sum = (field: "seconds" | "ok" | "non2xx" | "serverErrors" | "errors") =>
    runs.reduce((total, run) => total + run[field], 0);
  const latencies = new Float64Array(runs.reduce((n, run) => n + run.latencies.length, 0));
  let at = 0;
  for (const run of runs) {
    latencies.set(run.latencies, at);
    at += run.latencies.length;
  }
  return measurement({
    label: runs[0]!.label,
    connections: runs[0]!.connections,
    seconds: sum("seconds"),
    ok: sum("ok"),
    non2xx: sum("non2xx"),
    serverErrors: sum("serverErrors"),
    errors: sum("errors"),
  }, latencies.sort());
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle)
    ? (sorted[middle - 1]! + sorted[middle]!) / 2
    : sorted[Math.floor(middle)]!;
}

/** DuckDB's own count of its memory, the same by use, and the JavaScript heap, in MB. */
interface MemoryParts {
  storage: number;
  byUse: Map<string, number>;
  heap: number;
}

/** DuckDB's cache of table data, in MB: its use `base_table`. */
function tableData(parts: MemoryParts): number {
  return parts.byUse.get("base_table") ?? 0;
}

/** {@link MemoryParts} from /metrics. */
async function memoryParts(
  server: TestServer,
  token: string,
): Promise<MemoryParts> {
  const answer = await server.request("GET", "/metrics", { token });
  if (answer.status !== 200) throw new Error(`Cannot read /metrics: ${answer.text}`);
  const all = samples(answer.text);
  const gauge = (name: string) => value(all, name) / 1024 ** 2;
  const byUse = new Map(
    all.filter((s) => s.name === "table_service_storage_memory_by_use_bytes")
      .map((s) => [s.labels.use ?? "", s.value / 1024 ** 2]),
  );
  return {
    storage: gauge("table_service_storage_memory_bytes"),
    byUse,
    heap: gauge("table_service_js_heap_bytes"),
  };
}

/**
 * Appends {@link FILL_UPLOADS} × {@link FILL_ROWS} generated rows (ids from
 * {@link FILL_FIRST_ID}) by CSV upload, a table as large as a service that has run a while
 * may hold, and prints DuckDB's own count after each upload.
 * Returns the rows added.
 */
async function fillCache(server: TestServer, token: string): Promise<number> {
  const started = performance.now();
  const counts = [(await memoryParts(server, token)).storage];
  let filled = 0;
  for (let upload = 0; upload < FILL_UPLOADS; upload++) {
    const lines = [CSV_HEADER];
    for (let i = filled; i < filled + FILL_ROWS; i++) lines.push(csvLine(i, FILL_FIRST_ID + i));
    const csv = new TextEncoder().encode(`${lines.join("\n")}\n`);
    const answer = await server.request("POST", `table/${TABLE}/upload/csv?if_exists=append`, {
      token,
      body: uploadForm(csv, "rows.csv"),
    });
    if (answer.status !== 200 || answer.body.inserted !== FILL_ROWS) {
      throw new Error(`Cannot fill the table: ${answer.status} ${answer.text}`);
    }
    filled += FILL_ROWS;
    counts.push((await memoryParts(server, token)).storage);
  }
  console.log(
    `warm: ${grouped(filled)} rows appended by CSV upload in ${
      ((performance.now() - started) / 1000).toFixed(0)
    } s; DuckDB's count before and after each upload ${
      counts.map((c) => c.toFixed(0)).join(", ")
    } MB; service RSS now ${memory(server.pid, "VmRSS").toFixed(0)} MB`,
  );
  return filled;
}

/** Reads pages for {@link WARM_READ_SECONDS} and prints how many, with the service's RSS. */
async function readPages(server: TestServer, reads: Load): Promise<Measurement> {
  const run = await drive({ ...reads, seconds: WARM_READ_SECONDS, label: `warm: ${reads.label}` });
  console.log(
    `warm: ${grouped(run.ok)} pages read in ${WARM_READ_SECONDS} s (${run.serverErrors} 5xx); ` +
      `service RSS now ${memory(server.pid, "VmRSS").toFixed(0)} MB`,
  );
  return run;
}

/** Samples a process's resident memory while `work` runs. */
async function watchMemory<T>(
  pid: number,
  work: Promise<T>,
): Promise<{ result: T; startMb: number; endMb: number; peakMb: number; everyMb: number[] }> {
  const startMb = memory(pid, "VmRSS");
  let peakMb = startMb;
  // One reading every RSS_SERIES_MS, for the shape: growth that levels off, or a slope.
  const everyMb = [startMb];
  let sampled = 0;
  const timer = setInterval(() => {
    const mb = memory(pid, "VmRSS");
    peakMb = Math.max(peakMb, mb);
    if (++sampled % (RSS_SERIES_MS / RSS_SAMPLE_MS) === 0) everyMb.push(mb);
  }, RSS_SAMPLE_MS);
  try {
    const result = await work;
    const endMb = memory(pid, "VmRSS");
    return {
      result,
      startMb,
      endMb,
      peakMb: Math.max(peakMb, endMb),
      everyMb: [...everyMb, endMb],
    };
  } finally {
    clearInterval(timer);
  }
}

function grouped(value: number): string {
  return Math.round(value).toLocaleString("en");
}

/** A change in per cent of where it started. */
function growth(from: number, to: number): number {
  return (to - from) / from * 100;
}

/** {@link growth} as text with its sign: "+6.6 %", "-1.7 %". */
function percent(from: number, to: number): string {
  const change = growth(from, to);
  return `${change >= 0 ? "+" : ""}${change.toFixed(1)} %`;
}

function verdict(pass: boolean): string {
  return pass ? "PASS" : "FAIL";
}

function printTable(measurements: readonly Measurement[]): void {
  console.log(
    "run                                        conns  secs     req/s   p50 ms   p99 ms" +
      "  non-2xx   5xx  errors",
  );
  for (const m of measurements) {
    console.log(
      `${m.label.padEnd(42)} ${String(m.connections).padStart(5)} ${
        m.seconds.toFixed(0).padStart(5)
      } ${grouped(m.requestsPerSecond).padStart(9)} ${m.p50.toFixed(2).padStart(8)} ${
        m.p99.toFixed(2).padStart(8)
      } ${String(m.non2xx).padStart(8)} ${String(m.serverErrors).padStart(5)} ${
        String(m.errors).padStart(7)
      }`,
    );
  }
}

/**
 * Runs the load benchmark and prints its table: baseline, service inserts, service reads,
 * then a mixed soak of `soakSeconds` (default 300), after a ramp-up of its own mix, with the
 * service's RSS at its start and end.
 * With `warm`, the soak starts once {@link FILL_UPLOADS} × {@link FILL_ROWS} rows are in
 * (DuckDB's cache of table data then holds what the last upload left it, not its limit) and
 * the service has read pages for {@link WARM_READ_SECONDS}.
 */
export async function load(
  soakSeconds = 300,
  connections = CONNECTIONS,
  warm = false,
): Promise<void> {
  if (!Number.isFinite(soakSeconds) || soakSeconds < 1) {
    throw new Error(`Cannot soak for "${soakSeconds}" seconds: give a positive number`);
  }
  if (!Number.isInteger(connections) || connections < 2 || connections % 2 !== 0) {
    throw new Error(`Cannot open "${connections}" connections: give an even number, 2 or more`);
  }
  const seconds = Math.min(MEASURE_SECONDS, soakSeconds);
  // Outlives every run, warm-ups and soak included; the servers' default token does not.
  const token = await mint({ scope: ALL_SCOPES, expiresIn: soakSeconds + 1_800 });
  console.log(
    `\nLoad and soak: autocannon on loopback, ${connections} connections ` +
      `(inserts and their baseline also at ${MORE_CONNECTIONS}), ` +
      `${ROWS_PER_INSERT} rows × ${COLUMNS.length} columns per insert, ${seconds} s per run ` +
      `after ${WARMUP_SECONDS} s warm-up, soak ${soakSeconds} s after ${SOAK_RAMP_SECONDS} s ` +
      `of its own mix` +
      (warm
        ? `, once ${grouped(FILL_UPLOADS * FILL_ROWS)} rows are in and pages have been read`
        : ""),
  );
  // To measure the service with its memory trim off (0) or at another interval, or with
  // another memory limit for DuckDB.
  const passed = Object.fromEntries(
    PASSED_THROUGH.flatMap((name) => {
      const value = Deno.env.get(name);
      return value === undefined ? [] : [[name, value]];
    }),
  );
  console.log(
    `the service's ${
      PASSED_THROUGH.map((name) => `${name}: ${passed[name] ?? "its default"}`).join(", ")
    } (from the environment)`,
  );
  const levels = [...new Set([connections, MORE_CONNECTIONS])];
  const baselineServer = await startBaseline();
  const statsFile = await Deno.makeTempFile({ prefix: "bench-allocators-", suffix: ".json" });
  const server = await TestServer.spawn(
    {
      LOG_LEVEL: "error",
      BENCH_ALLOCATOR_STATS: statsFile,
      ...passed,
    },
    undefined,
    (env) => spawn(env, [], ["--preload", `${ROOT}bench/allocators.ts`]),
  ).catch(async (error) => {
    await baselineServer.dispose();
    throw error;
  });
  try {
    await createKeyedTable(server, token, TABLE);

    const batches = new Batches();
    const inserts: Step = {
      method: "POST",
      path: `/api/v1/table/${TABLE}/records`,
      body: () => batches.next(),
    };
    const readRecords: Step = { method: "GET", path: `/api/v1/table/${TABLE}/records?limit=10` };
    const readTable: Step = { method: "GET", path: `/api/v1/table/${TABLE}` };
    const on = { base: server.base, token, connections, seconds };
    const insertLoad: Load = { ...on, label: "service: POST /records, 10 rows", steps: [inserts] };
    const recordsLoad: Load = {
      ...on,
      label: "service: GET /records?limit=10",
      steps: [readRecords],
    };
    const tableLoad: Load = { ...on, label: "service: GET /table/{name}", steps: [readTable] };

    // Baseline: the same 10-row POST against the JWT-only server.
    const baselineBatches = new Batches();
    const baselineLoad: Load = {
      ...on,
      base: baselineServer.base,
      label: "baseline: Hono+jose, POST 10 rows",
      steps: [{ method: "POST", path: "/api/v1/records", body: () => baselineBatches.next() }],
    };

    // Every insert is counted, warm-ups too, to check the table against the answers.
    const insertRuns: Measurement[] = [];
    const insertsAt: Measurement[] = [];
    const baselines: Measurement[] = [];
    const roundRatios: number[][] = [];
    for (const level of levels) {
      const round = { connections: level, seconds: seconds / ROUNDS };
      await warmUp({ ...baselineLoad, connections: level });
      insertRuns.push(await warmUp({ ...insertLoad, connections: level }));
      const baselineRounds: Measurement[] = [];
      const insertRounds: Measurement[] = [];
      // In the order ABBA, each after a pause: what a run leaves behind (inserts cut off and
      // still committing, garbage) then weighs on both sides alike.
      for (let r = 0; r < ROUNDS; r++) {
        const order = r % 2 === 0 ? ["baseline", "service"] : ["service", "baseline"];
        for (const side of order) {
          await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
          if (side === "baseline") baselineRounds.push(await drive({ ...baselineLoad, ...round }));
          else insertRounds.push(await drive({ ...insertLoad, ...round }));
        }
      }
      insertRuns.push(...insertRounds);
      baselines.push(combined(baselineRounds));
      insertsAt.push(combined(insertRounds));
      roundRatios.push(
        insertRounds.map((run, r) => run.requestsPerSecond / baselineRounds[r]!.requestsPerSecond),
      );
    }
    await baselineServer.dispose();
    await warmUp(recordsLoad);
    const records = await drive(recordsLoad);
    await warmUp(tableLoad);
    const table = await drive(tableLoad);

    const filled = warm ? await fillCache(server, token) : 0;
    const warmReads = warm ? [await readPages(server, recordsLoad)] : [];

    // The soak: half the connections insert, half read; the same mix ramps up first.
    const half = connections / 2;
    const soakInserts: Load = {
      ...on,
      connections: half,
      seconds: soakSeconds,
      label: `soak: POST /records, 10 rows`,
      steps: [inserts],
    };
    const soakReads: Load = {
      ...on,
      connections: half,
      seconds: soakSeconds,
      label: `soak: GET /records + GET /table`,
      steps: [readRecords, readTable],
    };
    const rampStartMb = memory(server.pid, "VmRSS");
    const ramp = await Promise.all([
      warmUp(soakInserts, SOAK_RAMP_SECONDS),
      warmUp(soakReads, SOAK_RAMP_SECONDS),
    ]);
    insertRuns.push(ramp[0]);
    const partsStart = await memoryParts(server, token);
    const nativeStart = await allocators(server.pid, statsFile);
    const soak = await watchMemory(
      server.pid,
      Promise.all([drive(soakInserts), drive(soakReads)]),
    );
    const [soakInsert, soakRead] = soak.result;
    insertRuns.push(soakInsert);
    const partsEnd = await memoryParts(server, token);
    const nativeEnd = await allocators(server.pid, statsFile, true);

    // Let requests cut off when the generator stopped finish on the server before counting.
    await new Promise((r) => setTimeout(r, 1_000));
    const counted = await server.request(
      "GET",
      `table/${TABLE}/records?limit=1`,
      { token },
    );
    if (counted.status !== 200) throw new Error(`Cannot count the rows: ${counted.text}`);
    const rows = Number(counted.body.total);

    const measurements = [...baselines, ...insertsAt, records, table, soakInsert, soakRead];
    printTable(measurements);

    // The ramp-up's are counted too: it is as long as a measured run.
    const serverErrors = [...measurements, ...warmReads, ...ramp]
      .reduce((s, m) => s + m.serverErrors, 0);
    const answeredOk = insertRuns.reduce((sum, m) => sum + m.ok, 0);
    const rejected = insertRuns.reduce((sum, m) => sum + m.non2xx, 0);
    // Requests in flight when a run stopped were cut off unanswered; each may have landed.
    const unanswered = batches.issued - insertRuns.reduce((sum, m) => sum + m.answered, 0);
    const expected = answeredOk * ROWS_PER_INSERT + filled;
    levels.forEach((level, i) => {
      const ratio = insertsAt[i]!.requestsPerSecond / baselines[i]!.requestsPerSecond;
      const rounds = roundRatios[i]!;
      console.log(
        `insert req/s ÷ baseline req/s at ${level} connections: ${ratio.toFixed(2)} over ` +
          `${ROUNDS} alternating rounds (each round: ${
            rounds.map((r) => r.toFixed(2)).join(", ")
          }; median ${median(rounds).toFixed(2)}) (target ≥ 0.25)  ${verdict(ratio >= 0.25)}`,
      );
    });
    console.log(
      `5xx over all service runs: ${serverErrors} (target 0)  ${verdict(serverErrors === 0)}`,
    );
    console.log(
      `service RSS over the ${soakSeconds} s soak: ${soak.startMb.toFixed(0)} → ` +
        `${soak.endMb.toFixed(0)} MB, ${percent(soak.startMb, soak.endMb)} ` +
        `(peak ${soak.peakMb.toFixed(0)} MB; target < 10 %)  ${
          verdict(growth(soak.startMb, soak.endMb) < 10)
        }`,
    );
    console.log(
      `  RSS over the ${SOAK_RAMP_SECONDS} s ramp-up before it: ${rampStartMb.toFixed(0)} → ` +
        `${soak.startMb.toFixed(0)} MB, ${percent(rampStartMb, soak.startMb)}; from the ` +
        `ramp-up's start to the soak's end ${percent(rampStartMb, soak.endMb)}`,
    );
    console.log(
      `  RSS every ${RSS_SERIES_MS / 1000} s of the soak, then at its end: ${
        soak.everyMb.map((mb) => mb.toFixed(0)).join(", ")
      } MB`,
    );
    // DuckDB keeps the table's blocks it wrote or read cached up to its memory limit; what
    // grows besides that cache is what a leak would show as.
    const rest = (rss: number, parts: { storage: number; heap: number }) =>
      rss - parts.storage - parts.heap;
    const [restStart, restEnd] = [rest(soak.startMb, partsStart), rest(soak.endMb, partsEnd)];
    const change = (from: number, to: number) => `${from.toFixed(0)} → ${to.toFixed(0)} MB`;
    console.log(
      `  DuckDB by its own count (its cache of table data included): ` +
        `${change(partsStart.storage, partsEnd.storage)}, of which its cache of table data ` +
        `${change(tableData(partsStart), tableData(partsEnd))}; JavaScript heap: ` +
        `${change(partsStart.heap, partsEnd.heap)}; the rest (code, threads, native memory ` +
        `outside DuckDB's count): ${change(restStart, restEnd)}`,
    );
    const uses = [...new Set([...partsStart.byUse.keys(), ...partsEnd.byUse.keys()])]
      .filter((use) => (partsStart.byUse.get(use) ?? 0) + (partsEnd.byUse.get(use) ?? 0) >= 0.5);
    console.log(
      `  DuckDB's count by use: ${
        uses.map((use) =>
          `${use} ${change(partsStart.byUse.get(use) ?? 0, partsEnd.byUse.get(use) ?? 0)}`
        ).join(", ")
      }`,
    );
    // Not a second target: the cache is bounded by DUCKDB_MEMORY_LIMIT and holds the rows the
    // soak itself inserted, so this says how much of the growth is anything else.
    const cacheGrowth = tableData(partsEnd) - tableData(partsStart);
    console.log(
      `  RSS growth less the growth of DuckDB's cache of table data (${cacheGrowth.toFixed(0)} ` +
        `MB): ${percent(soak.startMb, soak.endMb - cacheGrowth)} of the start`,
    );
    if ("error" in nativeStart || "error" in nativeEnd) {
      const failed = [nativeStart, nativeEnd].find((s): s is { error: string } => "error" in s);
      console.log(`  native allocators: not read (${failed!.error})`);
    } else {
      const from = (read: (stats: ServiceMemory) => number) =>
        change(read(nativeStart), read(nativeEnd));
      console.log(
        `  native allocators: DuckDB's jemalloc (its count above included) allocated ` +
          `${from((s) => s.jemalloc.allocated)}, resident ${from((s) => s.jemalloc.resident)}; ` +
          `glibc's malloc (all other native code): heap ${from((s) => s.glibc.heap)}, ` +
          `in use ${from((s) => s.glibc.inUse)}, free ${from((s) => s.glibc.free)}; V8's heap ` +
          `resident ${from((s) => s.v8.physical)}, in use ${from((s) => s.v8.used)}, memory ` +
          `its objects own outside it ${from((s) => s.v8.external)}`,
      );
      console.log(
        `  RSS by kind: anonymous ${from((s) => s.rss.anonymous)}, mapped from files (code) ` +
          `${from((s) => s.rss.file)}`,
      );
      if (nativeEnd.trim) {
        const { before, after } = nativeEnd.trim;
        console.log(
          `  after the soak, one malloc_trim(0) took RSS from ${change(before, after)}: what ` +
            `glibc held freed and could have handed back`,
        );
      }
    }
    console.log(
      `rows in the table: ${grouped(rows)}; 2xx inserts × ${ROWS_PER_INSERT}${
        filled ? ` + ${grouped(filled)} filled in` : ""
      }: ${grouped(expected)}` +
        ` (${rejected} rejected; ${unanswered} cut off unanswered when runs stopped, ` +
        `which may add up to ${unanswered * ROWS_PER_INSERT} rows)  ${
          verdict(rows >= expected && rows <= expected + unanswered * ROWS_PER_INSERT)
        }`,
    );
  } finally {
    await baselineServer.dispose();
    await server.dispose();
    await Deno.remove(statsFile).catch(() => {});
  }
}
