/**
 * `deno task bench pgwire [rows]`: the PostgreSQL protocol against its baselines in one run.
 * Streaming `rows` rows × 8 columns to psql (text) from the service's listener, against the same
 * SELECT through `POST /query?format=csv` and against PostgreSQL 15 serving the same rows to
 * psql (over its Unix socket, and over TCP as the listener serves them), and for one more run
 * of each the CPU time the server and psql spent on it; and a one-row query over a kept
 * connection (npm:pg), against PostgreSQL 15's. The service runs in a child process on
 * DuckDB; the rows are the same on both sides.
 *
 * @module
 */

// @ts-types="@types/pg"
import pg from "pg";
import { TestServer } from "../tests/helpers/server.ts";
import { startPostgres } from "../tests/helpers/postgres.ts";
import { pgwirePort } from "../tests/helpers/pgwire.ts";
import { cpuMs, percentile, postgresCpuMs } from "./measure.ts";

const COLUMNS = [
  ["id", "bigint"],
  ["qty", "integer"],
  ["ratio", "double precision"],
  ["amount", "numeric(12,2)"],
  ["label", "text"],
  ["at", "timestamp with time zone"],
  ["flag", "boolean"],
  ["day", "date"],
];

/** The rows as SQL over `generate_series(1, n) AS g(i)`, alike in both databases. */
const SELECT_GENERATED = `SELECT i AS id, (i % 1000)::integer AS qty, i / 7.0 AS ratio,
  ((i % 100000) / 100.0)::numeric(12,2) AS amount, 'label ' || i AS label,
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 second' AS at, i % 2 = 0 AS flag,
  DATE '2024-01-01' + (i % 365)::integer AS day`;

/** Milliseconds of `work`. */
async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

async function psqlToNull(args: string[], env: Record<string, string>): Promise<void> {
  const output = await new Deno.Command("psql", {
    args: [...args, "-X", "-A", "-t", "-o", "/dev/null", "-c", "SELECT * FROM bench_rows"],
    env,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
}

/**
 * p50 of `count` one-row queries over one kept connection, after a warm-up of 1,000: the
 * steady state of a kept connection. With 50, the first few hundred samples still ran code
 * V8 had not yet optimised, and the p50 was twice the steady one.
 */
async function oneRowP50(client: pg.Client, count = 500): Promise<number> {
  for (let i = 0; i < 1_000; i++) await client.query("SELECT 1 AS one");
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    samples.push(await timed(() => client.query("SELECT 1 AS one")));
  }
  return percentile(samples.sort((a, b) => a - b), 0.5);
}

export async function pgwire(rows: number): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bench-pgwire-" });
  const postgres = await startPostgres(dir, undefined, { tcp: true });
  if (typeof postgres === "string") throw new Error(postgres);
  const server = await TestServer.spawn({ LOG_LEVEL: "error", QUERY_TIMEOUT_SECONDS: "600" });
  try {
    // The same rows on both sides: DuckDB makes the service's from the same SQL, loaded as CSV.
    const columns = COLUMNS.map(([name, type]) => ({ name, type }));
    const created = await server.request("POST", "table/bench_rows", {
      body: { table: { columns } },
    });
    if (created.status !== 200) throw new Error(created.text);
    await postgres.sql(
      `CREATE TABLE bench_rows AS ${SELECT_GENERATED} FROM generate_series(1, ${rows}) AS g(i)`,
    );
    const csv = await new Deno.Command("psql", {
      args: [
        "-h",
        postgres.socketDir,
        "-p",
        String(postgres.port),
        "-U",
        postgres.user,
        "postgres",
        "-X",
        "-c",
        "COPY bench_rows TO STDOUT (FORMAT csv, HEADER)",
      ],
      stdout: "piped",
    }).output();
    const form = new FormData();
    form.append("file", new Blob([csv.stdout], { type: "text/csv" }), "rows.csv");
    const loaded = await fetch(
      `${server.base}/api/v1/table/bench_rows/upload/csv?if_exists=append`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}` },
        body: form,
      },
    );
    if (!loaded.ok) throw new Error(await loaded.text());

    const wireArgs = ["-h", "127.0.0.1", "-p", String(pgwirePort(server)), "-U", "bench", "tables"];
    const pgArgs = [
      "-h",
      postgres.socketDir,
      "-p",
      String(postgres.port),
      "-U",
      postgres.user,
      "postgres",
    ];
    // PostgreSQL over TCP too, as the service's listener is: psql's own work differs by transport.
    const pgTcpArgs = pgArgs.with(1, "127.0.0.1");
    const wireEnv = { PGPASSWORD: server.token };
    // Warm both, then take the better of three runs of each.
    await psqlToNull(wireArgs, wireEnv);
    await psqlToNull(pgArgs, {});
    const best = async (work: () => Promise<unknown>) =>
      Math.min(await timed(work), await timed(work), await timed(work));
    const wire = await best(() => psqlToNull(wireArgs, wireEnv));
    const direct = await best(() => psqlToNull(pgArgs, {}));
    const directTcp = await best(() => psqlToNull(pgTcpArgs, {}));
    // One more run of each with the CPU every process spent on it: on two cores, psql's share
    // is what the server can not have.
    const spent = async (server: () => number, work: () => Promise<unknown>) => {
      const [own, served] = [cpuMs("self", true), server()];
      const ms = await timed(work);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the backend reaped
      return { ms, server: server() - served, psql: cpuMs("self", true) - own };
    };
    const wireCpu = await spent(() => cpuMs(server.pid), () => psqlToNull(wireArgs, wireEnv));
    const directCpu = await spent(postgresCpuMs, () => psqlToNull(pgArgs, {}));
    const directTcpCpu = await spent(postgresCpuMs, () => psqlToNull(pgTcpArgs, {}));
    const http = await best(async () => {
      const answer = await fetch(`${server.base}/api/v1/query?format=csv`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify({ sql: "SELECT * FROM bench_rows" }),
      });
      await answer.body!.pipeTo(new WritableStream());
    });

    const wireClient = new pg.Client({
      host: "127.0.0.1",
      port: pgwirePort(server),
      user: "bench",
      password: server.token,
    });
    const pgClient = new pg.Client({
      host: postgres.socketDir,
      port: postgres.port,
      user: postgres.user,
      database: "postgres",
    });
    await wireClient.connect();
    await pgClient.connect();
    const wireP50 = await oneRowP50(wireClient);
    const pgP50 = await oneRowP50(pgClient);
    await wireClient.end();
    await pgClient.end();

    console.log(`\nPostgreSQL protocol: ${rows} rows × 8 columns to psql (text), best of three`);
    console.log("path                                  ms    rows/s   service's speed ×");
    const line = (label: string, ms: number, ratio?: number) =>
      console.log(
        `${label.padEnd(34)} ${ms.toFixed(0).padStart(6)} ${
          Math.round(rows / (ms / 1000)).toString().padStart(9)
        }   ${ratio === undefined ? "" : ratio.toFixed(2).padStart(6)}`,
      );
    line("service, PostgreSQL protocol (psql)", wire);
    line("service, POST /query?format=csv", http, http / wire);
    line("PostgreSQL 15 to psql", direct, direct / wire);
    line("PostgreSQL 15 to psql over TCP", directTcp, directTcp / wire);
    const cpuLine = (label: string, run: { ms: number; server: number; psql: number }) =>
      console.log(
        `${label.padEnd(34)} ${run.ms.toFixed(0).padStart(6)} ms wall, server ${
          run.server.toFixed(0)
        } ms CPU, psql ${run.psql.toFixed(0)} ms CPU: ${
          ((run.server + run.psql) / run.ms).toFixed(2)
        } cores busy`,
      );
    console.log("One more run of each, with the CPU of its processes:");
    cpuLine("service, PostgreSQL protocol (psql)", wireCpu);
    cpuLine("PostgreSQL 15 to psql", directCpu);
    cpuLine("PostgreSQL 15 to psql over TCP", directTcpCpu);
    console.log(
      `One-row query over a kept connection (npm:pg, p50 of 500 after 1,000): service ${
        wireP50.toFixed(2)
      } ms, PostgreSQL 15 ${pgP50.toFixed(2)} ms (over its Unix socket), difference ${
        (wireP50 - pgP50).toFixed(2)
      } ms`,
    );
  } finally {
    await server.dispose();
    await postgres.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
