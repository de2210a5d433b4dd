/**
 * `deno task bench bounds`: how close to its limit each hostile read of issue 44 is answered,
 * and how much it moves the service's memory. The service runs in a process of its own with
 * `QUERY_TIMEOUT_SECONDS=2`; each answer's time is printed as a ratio to that limit (a 408 due
 * at 1.0×, the contract allowing up to 1 s past it), a 400 refused before it ran as a ratio to
 * `SELECT 1` measured in the same run, and the service's peak RSS above its RSS before the
 * request against `DUCKDB_MEMORY_LIMIT` + 256 MiB.
 *
 * @module
 */

import { mint, TestServer } from "../tests/helpers/server.ts";

const LIMIT_SECONDS = 2;
const MIB = 1024 ** 2;

function nest(depth: number, wrap: (inner: string) => string, base: string): string {
  let sql = base;
  for (let i = 0; i < depth; i++) sql = wrap(sql);
  return sql;
}

/** Resident memory of process `pid`, in bytes. */
async function rss(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

/** Prints, per hostile read, its status, time against the limit and memory against the bound. */
export async function readBounds(): Promise<void> {
  const memoryLimit = 256 * MIB;
  const server = await TestServer.spawn({
    LOG_LEVEL: "error",
    QUERY_TIMEOUT_SECONDS: String(LIMIT_SECONDS),
    DUCKDB_MEMORY_LIMIT: "256MiB",
  });
  try {
    const token = await mint({ scope: "tables:read" });
    await server.request("POST", "table/t/upload/json", {
      body: { data: [{ s: "a".repeat(400) }] },
    });
    const send = (sql: string, params?: unknown[]) =>
      server.request("POST", "query", { token, body: params ? { sql, params } : { sql } });
    for (let i = 0; i < 20; i++) await send("SELECT 1");
    const baselines: number[] = [];
    for (let i = 0; i < 50; i++) {
      const began = performance.now();
      await send("SELECT 1");
      baselines.push(performance.now() - began);
    }
    baselines.sort((a, b) => a - b);
    const baseline = baselines[25]!;
    const cases: [string, string, unknown[]?][] = [
      ["repeat('x', 1e9)", "SELECT length(repeat('x', 1e9))"],
      ["list_resize([1], 2e7)", "SELECT len(list_resize([1], 20000000))"],
      ["990 nested lists", `SELECT ${nest(990, (s) => `[${s}]`, "1")}`],
      ["range(1e7)", "SELECT len(range(10000000))"],
      ["40 nested lambdas", `SELECT ${nest(40, (s) => `list_transform([1], x -> ${s})`, "x")}`],
      ["990 nested abs()", `SELECT ${nest(990, (s) => `abs(${s})`, "1")}`],
      ["LIKE $1, 11 wildcards", "SELECT repeat('a', 100000) LIKE $1", ["%a%a%a%a%a%a%a%a%a%a%b"]],
      ["cross join", "SELECT max(a.x + b.x) FROM range(1000000) a(x), range(1000000) b(x)"],
      [
        "string_agg past memory",
        "SELECT length(string_agg(repeat('x', 100000), '')) FROM range(100000)",
      ],
    ];
    console.log(
      `\nHostile reads (QUERY_TIMEOUT_SECONDS=${LIMIT_SECONDS}, DUCKDB_MEMORY_LIMIT=256MiB); ` +
        `SELECT 1 p50 ${baseline.toFixed(2)} ms`,
    );
    console.log(
      "read                        status   ms        × limit   × SELECT 1   peak RSS above before",
    );
    for (const [label, sql, params] of cases) {
      const before = await rss(server.pid);
      let peak = before;
      const sampler = setInterval(async () => peak = Math.max(peak, await rss(server.pid)), 10);
      const began = performance.now();
      const answer = await send(sql, params);
      const ms = performance.now() - began;
      clearInterval(sampler);
      const above = (peak - before) / MIB;
      console.log(
        `${label.padEnd(27)} ${String(answer.status).padEnd(8)} ${ms.toFixed(1).padStart(8)}  ${
          (ms / (LIMIT_SECONDS * 1000)).toFixed(2).padStart(7)
        }×  ${(ms / baseline).toFixed(1).padStart(9)}×   ${above.toFixed(0).padStart(5)} MiB of ${
          (memoryLimit + 256 * MIB) / MIB
        }`,
      );
    }
  } finally {
    await server.dispose();
  }
}
