/**
 * How `bench/analytics.ts` measures: the service as it reaches it, rounds alternated with
 * their baselines, medians, the server's peak RSS and what holds it, and the closing table.
 *
 * @module
 */

import type { DuckDBConnection } from "@duckdb/node-api";
import type { TestServer } from "../tests/helpers/server.ts";
import { allocators } from "./allocators.ts";
import { samples as metricSamples, value } from "../tests/helpers/metrics.ts";
import { memory, percentile } from "./measure.ts";

/** The running service as the measurements reach it. */
export interface Api {
  readonly server: TestServer;
  readonly token: string;
  /** Where the preloaded bench/allocators.ts writes the service's allocator figures. */
  readonly statsFile: string;
}

/** One target's figures: service and baseline medians in ms, and the server's memory. */
export interface Row {
  readonly what: string;
  readonly service: number;
  readonly baseline?: number;
  /** What the ratio means, e.g. "baseline ÷ service"; absent for an absolute target. */
  readonly ratio?: number;
  readonly target: string;
  readonly pass: boolean;
  readonly rss?: RssFigures;
}

/** The server's resident memory at the start of some work and its peak during it, in MB. */
export interface RssFigures {
  readonly startMb: number;
  readonly peakMb: number;
}

/**
 * Runs `work` and reads the server's peak RSS meanwhile: VmHWM reset at the start (clear_refs
 * 5) and VmRSS polled every 20 ms, in case the reset is not allowed.
 */
export async function withPeakRss<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<[T, RssFigures]> {
  let reset = true;
  try {
    Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    reset = false;
  }
  const startMb = memory(pid, "VmRSS");
  let polled = startMb;
  const timer = setInterval(() => {
    try {
      polled = Math.max(polled, memory(pid, "VmRSS"));
    } catch {
      // The server has gone; work's own failure says why.
    }
  }, 20);
  try {
    const result = await work();
    const hwm = reset ? memory(pid, "VmHWM") : 0;
    return [result, { startMb, peakMb: Math.max(polled, hwm) }];
  } finally {
    clearInterval(timer);
  }
}

/**
 * What holds the server's memory now, from /metrics: DuckDB's own count, its cache of table
 * data, and the JavaScript heap, beside RSS.
 */
export async function memoryNow(api: Api): Promise<string> {
  const response = await fetch(`${api.server.base}/metrics`, {
    headers: { authorization: `Bearer ${api.token}` },
  });
  const all = metricSamples(await response.text());
  const mb = (name: string, labels?: Record<string, string>) =>
    (value(all, name, labels) / 1024 ** 2).toFixed(0);
  const native = await allocators(api.server.pid, api.statsFile);
  const split = "error" in native
    ? `allocators not read (${native.error})`
    : `DuckDB's jemalloc allocated ${native.jemalloc.allocated.toFixed(0)} MB, resident ${
      native.jemalloc.resident.toFixed(0)
    } MB; glibc's malloc heap ${native.glibc.heap.toFixed(0)} MB (in use ${
      native.glibc.inUse.toFixed(0)
    }, free ${native.glibc.free.toFixed(0)}); V8 resident ${native.v8.physical.toFixed(0)} MB`;
  return `after it: RSS ${memory(api.server.pid, "VmRSS").toFixed(0)} MB; DuckDB counts ${
    mb("table_service_storage_memory_bytes")
  } MB (table data ${
    mb("table_service_storage_memory_by_use_bytes", { use: "base_table" })
  } MB); ${split}`;
}

export function median(samples: readonly number[]): number {
  return percentile([...samples].sort((a, b) => a - b), 0.5);
}

export function loadAverage(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
}

export function elapsed(started: number): number {
  return performance.now() - started;
}

export async function get(api: Api, path: string): Promise<{ ms: number; text: string }> {
  const started = performance.now();
  const response = await fetch(`${api.server.base}${path}`, {
    headers: { authorization: `Bearer ${api.token}` },
  });
  const text = await response.text();
  const ms = elapsed(started);
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${text}`);
  return { ms, text };
}

export async function serviceQuery(api: Api, sql: string): Promise<{ ms: number; text: string }> {
  const started = performance.now();
  const response = await fetch(`${api.server.base}/api/v1/query?format=json`, {
    method: "POST",
    headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
    body: JSON.stringify({ sql, params: [] }),
  });
  const text = await response.text();
  const ms = elapsed(started);
  if (response.status !== 200) throw new Error(`POST /query: ${response.status} ${text}`);
  return { ms, text };
}

/** Runs each of `runs` once per round, in an order rotated every round; returns each's ms. */
export async function alternate(
  rounds: number,
  runs: (() => Promise<number>)[],
): Promise<number[][]> {
  const samples = runs.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < runs.length; k++) {
      const index = (k + round) % runs.length;
      samples[index]!.push(await runs[index]!());
    }
  }
  return samples;
}

export function show(label: string, samples: readonly number[]): void {
  console.log(
    `  ${label.padEnd(44)} median ${median(samples).toFixed(1).padStart(8)} ms   runs ${
      samples.map((s) => s.toFixed(1)).join(", ")
    }`,
  );
}

export function report(rows: readonly Row[], rssLimitMb: number): void {
  console.log(
    "\ntarget                          service ms  baseline ms     ratio  target  result" +
      "   RSS start → peak",
  );
  for (const row of rows) {
    const rss = row.rss
      ? `${row.rss.startMb.toFixed(0).padStart(5)} → ${row.rss.peakMb.toFixed(0)} MB ${
        row.rss.peakMb <= rssLimitMb ? "pass" : "FAIL"
      }`
      : "";
    console.log(
      `${row.what.padEnd(30)} ${row.service.toFixed(2).padStart(11)} ${
        row.baseline === undefined ? "—".padStart(12) : row.baseline.toFixed(2).padStart(12)
      } ${row.ratio === undefined ? "—".padStart(9) : row.ratio.toFixed(2).padStart(9)}  ${
        row.target.padEnd(6)
      }  ${row.pass ? "pass" : "FAIL"}   ${rss}`,
    );
  }
  console.log(
    "ratios: DuckDB and PostgreSQL ÷ service time (speed), deep ÷ first page time; " +
      `RSS target ≤ ${rssLimitMb} MB`,
  );
}

/** The service's Parquet export into `path` by curl: ms and bytes. */
export async function serviceParquet(
  api: Api,
  path: string,
): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const output = await new Deno.Command("curl", {
    args: [
      "-s",
      "-o",
      path,
      "-H",
      `Authorization: Bearer ${api.token}`,
      "-w",
      "%{http_code} %{size_download}",
      `${api.server.base}/api/v1/table/t/records/parquet`,
    ],
    stdout: "piped",
  }).output();
  const ms = elapsed(started);
  const [status, bytes] = new TextDecoder().decode(output.stdout).split(" ");
  if (status !== "200") throw new Error(`GET records/parquet answered ${status}`);
  return { ms, bytes: Number(bytes) };
}

export async function duckdbParquet(
  connection: DuckDBConnection,
  path: string,
  source = "t",
): Promise<number> {
  const started = performance.now();
  await connection.run(`COPY ${source} TO '${path}' (FORMAT parquet)`);
  return elapsed(started);
}
