/**
 * `deno task test`: the whole suite on DuckDB (unit, doc and HTTP tests), and at the same time
 * the HTTP suite (`tests/*_test.ts`) with `TEST_ENGINE=postgres`, on one throwaway PostgreSQL
 * 15 started here and stopped at the end, even on failure, SIGINT or SIGTERM; the PostgreSQL
 * engine's own tests, in the DuckDB run, make their databases on the same server. `TEST_ENGINES=duckdb` (or `postgres`) makes one run alone. The DuckDB run
 * prints as it goes; the PostgreSQL run's output follows it. Exits non-zero if either fails.
 * Without postgresql-15 the PostgreSQL run is skipped with one line, unless `REQUIRE_POSTGRES`
 * is set (CI sets it). Arguments go to both `deno test` commands (`-- --filter auth`).
 *
 * @module
 */

import { postgresMissing, startTestPostgres, type TestPostgres } from "./helpers/postgres.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/**
 * The slowest files, started first: started last in alphabetical order they kept one CPU busy
 * alone at the end of the run.
 */
const HEAVY = [
  "tests/crash_test.ts",
  "tests/wide_tables_test.ts",
  "tests/rows_test.ts",
  "tests/concurrency_test.ts",
  "tests/record_changes_test.ts",
  "tests/update_test.ts",
  "tests/coercion_test.ts",
  "tests/full_disk_test.ts",
  "tests/update_property_test.ts",
  "tests/startup_test.ts",
];

/**
 * The HTTP suite: every `tests/*_test.ts`, the heavy ones first, but those written for
 * PostgreSQL alone (`tests/postgres_*_test.ts`), which the DuckDB run already runs on the
 * same server.
 */
async function httpSuite(): Promise<string[]> {
  const rest: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}tests`)) {
    const path = `tests/${entry.name}`;
    if (!entry.isFile || !entry.name.endsWith("_test.ts") || HEAVY.includes(path)) continue;
    if (!entry.name.startsWith("postgres_")) rest.push(path);
  }
  return [...HEAVY, ...rest.sort()];
}

/** A `deno test` run of its own, with this process's environment changed by `env`. */
function denoTest(args: string[], env: Record<string, string>, piped: boolean): Run {
  const base = Deno.env.toObject();
  delete base.TEST_ENGINE;
  delete base.TEST_POSTGRES_URL;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "--allow-all", "--parallel", "--lock=deno.dev.lock", ...args],
    cwd: ROOT,
    env: { ...base, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return { child, piped };
}

/** A `deno test` started, and whether its output is collected or shown as it comes. */
interface Run {
  readonly child: Deno.ChildProcess;
  readonly piped: boolean;
}

const running = new Set<Deno.ChildProcess>();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  // The runs end on the signal; this process waits for them, then stops the server.
  Deno.addSignalListener(signal, () => {
    for (const child of running) {
      try {
        child.kill(signal);
      } catch {
        // Already gone.
      }
    }
  });
}

/**
 * Runs `child` to its end; answers its exit code and its output: collected when piped, else
 * shown as it comes and only its end kept (where `deno test` writes its counts).
 */
async function finish({ child, piped }: Run): Promise<{ code: number; output: string }> {
  running.add(child);
  try {
    // Both streams into one, chunk by chunk, as a terminal would have shown them.
    const parts: string[] = [];
    const collect = async (stream: ReadableStream<Uint8Array>, shown: typeof Deno.stdout) => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) {
        if (!piped) await writeAll(shown, chunk);
        parts.push(decoder.decode(chunk, { stream: true }));
        if (!piped && parts.length > 64) parts.splice(0, parts.length - 64);
      }
    };
    await Promise.all([collect(child.stdout, Deno.stdout), collect(child.stderr, Deno.stderr)]);
    const { code } = await child.status;
    return { code, output: parts.join("") };
  } finally {
    running.delete(child);
  }
}

async function writeAll(writer: typeof Deno.stdout, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    written += await writer.write(bytes.subarray(written));
  }
}

/**
 * The tests passed and failed that `deno test` counted in `output` (its closing line,
 * `ok | 1018 passed (543 steps) | 0 failed`), or undefined when it wrote none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { counted } from "./run.ts";
 *
 * const line = "\x1b[32mok\x1b[0m | 1018 passed (543 steps) | 0 failed \x1b[38;5;245m(4m)\x1b[0m";
 * assert.deepEqual(counted(`…\n${line}\n`), { passed: 1018, failed: 0 });
 * assert.deepEqual(counted("FAILED | 3 passed | 1 failed | 2 ignored"), { passed: 3, failed: 1 });
 * assert.equal(counted("error: Module not found"), undefined);
 * ```
 */
export function counted(output: string): { passed: number; failed: number } | undefined {
  // deno-lint-ignore no-control-regex -- colours are escape sequences
  const plain = output.replaceAll(/\x1b\[[0-9;]*m/g, "");
  const found = [...plain.matchAll(/(\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/g)].at(-1);
  return found ? { passed: Number(found[1]), failed: Number(found[2]) } : undefined;
}

/**
 * The runs to make: `TEST_ENGINES` (`duckdb`, `postgres` or both, comma-separated), both when
 * unset. The PostgreSQL engine's own unit tests are part of the DuckDB run, so a server is
 * started for either.
 */
const engines = (Deno.env.get("TEST_ENGINES") ?? "duckdb,postgres").split(",").map((e) => e.trim());
for (const engine of engines) {
  if (engine !== "duckdb" && engine !== "postgres") {
    throw new Error(`TEST_ENGINES names "${engine}", neither duckdb nor postgres`);
  }
}

async function main(extra: string[]): Promise<number> {
  const duckdbArgs = ["--doc", ...extra, ...HEAVY, "."];
  const missing = await postgresMissing();
  let postgres: TestPostgres | string | undefined;
  if (missing && Deno.env.get("REQUIRE_POSTGRES")) {
    console.error(`REQUIRE_POSTGRES is set, but ${missing}`);
    return 1;
  }
  if (!missing) postgres = await startTestPostgres();
  if (typeof postgres !== "object") {
    console.log(`The HTTP tests on PostgreSQL are skipped: ${missing ?? postgres}`);
  }
  try {
    // The PostgreSQL engine's own tests in the DuckDB run use the same server.
    const shared: Record<string, string> = typeof postgres === "object"
      ? { TEST_POSTGRES_URL: postgres.url }
      : {};
    const duckdb = engines.includes("duckdb")
      ? finish(denoTest(duckdbArgs, shared, false))
      : Promise.resolve({ code: 0, output: "" });
    const onPostgres = typeof postgres === "object" && engines.includes("postgres")
      ? finish(
        denoTest([...extra, ...await httpSuite()], {
          TEST_ENGINE: "postgres",
          TEST_POSTGRES_URL: postgres.url,
        }, true),
      )
      : undefined;
    const [duck, pg] = await Promise.all([duckdb, onPostgres]);
    if (pg) {
      console.log("\n=== The HTTP tests on PostgreSQL (TEST_ENGINE=postgres) ===\n");
      await Deno.stdout.write(new TextEncoder().encode(pg.output));
    }
    const outcome = (code: number) => code === 0 ? "passed" : `failed (exit ${code})`;
    console.log(
      `\nDuckDB: ${engines.includes("duckdb") ? outcome(duck.code) : "not run (TEST_ENGINES)"}`,
    );
    console.log(
      pg
        ? `PostgreSQL: ${outcome(pg.code)}`
        : !engines.includes("postgres")
        ? "PostgreSQL: not run (TEST_ENGINES)"
        : `PostgreSQL: skipped, ${missing ?? postgres}`,
    );
    // One plain line for CI, the sum of both runs; a run that counted nothing failed.
    const counts = [duck, pg].filter((run) => run !== undefined && (run.output || run.code))
      .map((run) => counted(run!.output) ?? { passed: 0, failed: 1 });
    const sum = (key: "passed" | "failed") => counts.reduce((n, c) => n + c[key], 0);
    console.log(`\n${sum("passed")} passed, ${sum("failed")} failed`);
    return duck.code === 0 && (pg === undefined || pg.code === 0) ? 0 : 1;
  } finally {
    // A run that failed to start or to be read leaves the other one to stop before the server.
    for (const child of running) child.kill("SIGTERM");
    await Promise.allSettled([...running].map((child) => child.status));
    if (typeof postgres === "object") await postgres.stop();
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
