/**
 * Issue 37's targets on the PostgreSQL engine, each against a baseline measured in the same
 * run on one throwaway PostgreSQL 15: a `rows`-row JSON `POST /records` against PostgreSQL's
 * own `COPY` of the same rows as CSV from a file through psql (the engine's limit) and
 * against `INSERT … SELECT FROM json_populate_recordset` (what PostgREST runs); then
 * small inserts (10 rows a request, 32 connections) into two instances on one database
 * against one instance.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix -- a tool of benchmarks, kept out of the import map (deno.dev.lock)
import pg from "npm:pg@^8.23.1";
import { TestServer } from "../tests/helpers/server.ts";
import { type Postgres, startPostgres } from "../tests/helpers/postgres.ts";
import {
  columnList,
  COLUMNS,
  createKeyedTable,
  row,
  writeCsvRows,
  writeJsonRows,
} from "./generate.ts";
import { type Measured, serviceLoad } from "./loading.ts";
import { cpuMs, postgresCpuMs } from "./measure.ts";

const TABLE = columnList("pg");

/** A new empty database on `postgres`, and its URL. */
async function database(postgres: Postgres): Promise<string> {
  const name = `b_${crypto.randomUUID().replaceAll("-", "")}`;
  await postgres.sql(`CREATE DATABASE ${name}`);
  const url = new URL(postgres.url);
  url.pathname = `/${name}`;
  return url.toString();
}

/** psql's `\copy` of the CSV file into a new table: PostgreSQL's own load, the limit. */
async function psqlCopy(postgres: Postgres, csv: string, rows: number): Promise<Measured> {
  const table = `copy_${crypto.randomUUID().slice(0, 8)}`;
  await postgres.sql(`CREATE TABLE ${table} (${TABLE})`);
  const started = performance.now();
  await postgres.sql(`\\copy ${table} FROM '${csv}' (FORMAT csv, HEADER)`);
  const seconds = (performance.now() - started) / 1000;
  const count = Number((await postgres.sql(`SELECT count(*) FROM ${table}`)).trim());
  if (count !== rows) throw new Error(`COPY loaded ${count} rows, not ${rows}`);
  return { seconds, rows };
}

/** The array bound as one parameter of `INSERT … SELECT FROM json_populate_recordset`. */
async function populateRecordset(postgres: Postgres, json: string, rows: number) {
  const table = `populate_${crypto.randomUUID().slice(0, 8)}`;
  await postgres.sql(`CREATE TABLE ${table} (${TABLE})`);
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const started = performance.now();
    const body = await Deno.readTextFile(json);
    await client.query(
      `INSERT INTO ${table} SELECT * FROM json_populate_recordset(null::${table}, $1::json)`,
      [body],
    );
    const seconds = (performance.now() - started) / 1000;
    const count = Number((await postgres.sql(`SELECT count(*) FROM ${table}`)).trim());
    if (count !== rows) throw new Error(`json_populate_recordset loaded ${count}, not ${rows}`);
    return { seconds, rows };
  } finally {
    await client.end();
  }
}

/**
 * `connections` clients each sending inserts of `batch` rows for `seconds`, spread over the
 * servers in turn; answers inserts per second. Any answer but 200 fails the run.
 */
async function smallInserts(
  servers: readonly TestServer[],
  table: string,
  connections: number,
  seconds: number,
  batch: number,
  firstId: number,
): Promise<{ perSecond: number; rows: number; requests: number }> {
  let next = firstId;
  let done = 0;
  const until = performance.now() + seconds * 1000;
  const client = async (n: number) => {
    const server = servers[n % servers.length]!;
    while (performance.now() < until) {
      const body = JSON.stringify(Array.from({ length: batch }, () => row(next++)));
      const response = await fetch(`${server.base}/api/v1/table/${table}/records`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body,
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`insert answered ${response.status}: ${text}`);
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, (_, n) => client(n)));
  const elapsed = (performance.now() - started) / 1000;
  return { perSecond: done / elapsed, rows: done * batch, requests: done };
}

async function instances(postgres: Postgres, seconds: number): Promise<void> {
  const url = await database(postgres);
  const env = { LOG_LEVEL: "error", DATABASE_URL: url };
  const servers = [await TestServer.spawn(env), await TestServer.spawn(env)];
  try {
    const created = await servers[0]!.request("POST", "table/small", {
      body: {
        table: {
          columns: COLUMNS.map((c) => ({ name: c.name, type: c.type })),
          constraints: { primary_key: { columns: ["id"] } },
        },
      },
    });
    if (created.status !== 200) throw new Error(`Cannot create the table: ${created.text}`);
    await smallInserts(servers, "small", 32, 2, 10, 0); // warm-up
    // Alternated twice, each configuration's best kept: the machine is shared.
    const one: number[] = [];
    const two: number[] = [];
    let id = 10_000_000;
    for (let round = 0; round < 2; round++) {
      const a = await smallInserts(servers.slice(0, 1), "small", 32, seconds, 10, id);
      id += a.rows + 1;
      one.push(a.perSecond);
      const b = await smallInserts(servers, "small", 32, seconds, 10, id);
      id += b.rows + 1;
      two.push(b.perSecond);
    }
    const best = (values: number[]) => Math.max(...values);
    console.log(
      `small inserts (10 rows, 32 connections): one instance ${best(one).toFixed(0)}/s, ` +
        `two instances ${best(two).toFixed(0)}/s: ${(best(two) / best(one)).toFixed(2)}× ` +
        `(target ≥ 1.5×; rounds ${one.map((v) => v.toFixed(0)).join(", ")} | ${
          two.map((v) => v.toFixed(0)).join(", ")
        })`,
    );
  } finally {
    for (const server of servers) await server.dispose();
  }
}

/** The baseline server of bench/baseline_server.ts, inserting into the database at `url`. */
function startPeer(url: string): Promise<TestServer> {
  return TestServer.spawn({}, undefined, (env) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-env",
        "--allow-net",
        "--allow-read",
        "--allow-sys",
        "--allow-write", // the database's Unix socket
        "--lock=deno.dev.lock",
        new URL("./baseline_server.ts", import.meta.url).pathname,
      ],
      cwd: new URL("..", import.meta.url).pathname,
      env: { ...env, DATABASE_URL: url },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).spawn());
}

/**
 * Inserts of 10 rows at 16 connections into one instance of the service on PostgreSQL against
 * the minimal Hono + `pg` server running `json_populate_recordset` on the same database, and
 * the service's CPU per request.
 */
async function againstPeer(postgres: Postgres, seconds: number): Promise<void> {
  const url = await database(postgres);
  // As many connections as the peer's pool holds.
  const service = await TestServer.spawn({
    LOG_LEVEL: "error",
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: "16",
  });
  const peer = await startPeer(url);
  try {
    await createKeyedTable(service, service.token, "small");
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`CREATE TABLE peer (${TABLE}, PRIMARY KEY (id))`);
    await client.end();
    await smallInserts([service], "small", 16, 2, 10, 0); // warm-up
    await smallInserts([peer], "peer", 16, 2, 10, 0);
    const ours: number[] = [];
    const theirs: number[] = [];
    const cpu: number[] = [];
    // PostgreSQL's CPU per insert, for the service's inserts and the peer's.
    const engine: [number[], number[]] = [[], []];
    let id = 10_000_000;
    for (let round = 0; round < 2; round++) {
      const before = cpuMs(service.pid);
      let engineBefore = postgresCpuMs();
      const a = await smallInserts([service], "small", 16, seconds, 10, id);
      cpu.push((cpuMs(service.pid) - before) / a.requests);
      engine[0].push((postgresCpuMs() - engineBefore) / a.requests);
      id += a.rows + 1;
      ours.push(a.perSecond);
      engineBefore = postgresCpuMs();
      const b = await smallInserts([peer], "peer", 16, seconds, 10, id);
      engine[1].push((postgresCpuMs() - engineBefore) / b.requests);
      id += b.rows + 1;
      theirs.push(b.perSecond);
    }
    const best = (values: number[]) => Math.max(...values);
    console.log(
      `small inserts (10 rows, 16 connections): service ${best(ours).toFixed(0)}/s, ` +
        `Hono + pg json_populate_recordset ${best(theirs).toFixed(0)}/s: ${
          (best(ours) / best(theirs)).toFixed(2)
        }× (target ≥ 0.8×; rounds ${ours.map((v) => v.toFixed(0)).join(", ")} | ${
          theirs.map((v) => v.toFixed(0)).join(", ")
        }); the service's CPU ${Math.min(...cpu).toFixed(2)} ms a request (aim ≤ 2; rounds ${
          cpu.map((v) => v.toFixed(2)).join(", ")
        }); PostgreSQL's CPU a request: ${
          engine[0].map((v) => v.toFixed(2)).join(", ")
        } ms for the service's, ${engine[1].map((v) => v.toFixed(2)).join(", ")} for the peer's`,
    );
  } finally {
    await peer.dispose();
    await service.dispose();
  }
}

/** Runs the scale-out benchmark and prints its figures. */
export async function scaleOut(rows = 1_000_000, seconds = 10): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "table-service-bench-" });
  await Deno.chmod(dir, 0o755);
  const postgres = await startPostgres(`${dir}/pg`, "bench");
  if (typeof postgres === "string") {
    console.log(`scale-out: not measured: ${postgres}`);
    return;
  }
  try {
    const json = `${dir}/rows.json`;
    const csv = `${dir}/rows.csv`;
    await writeJsonRows(json, rows);
    await writeCsvRows(csv, rows);
    await Deno.chmod(json, 0o644);
    await Deno.chmod(csv, 0o644);
    console.log(`\nScale-out: ${rows.toLocaleString("en")} rows × 8 columns on PostgreSQL 15`);
    const copies: Measured[] = [];
    const services: Measured[] = [];
    for (let round = 0; round < 2; round++) {
      copies.push(await psqlCopy(postgres, csv, rows));
      services.push(await serviceLoad(json, rows, { DATABASE_URL: await database(postgres) }));
    }
    const fastest = (values: Measured[]) => values.reduce((a, b) => a.seconds <= b.seconds ? a : b);
    const copy = fastest(copies);
    const service = fastest(services);
    const peer = await populateRecordset(postgres, json, rows);
    console.log(`psql \\copy of the CSV:             ${copy.seconds.toFixed(2)} s`);
    console.log(`POST /records on PostgreSQL:        ${service.seconds.toFixed(2)} s`);
    console.log(`json_populate_recordset (PostgREST): ${peer.seconds.toFixed(2)} s`);
    console.log(
      `service / COPY: ${(copy.seconds / service.seconds).toFixed(2)}× (target ≥ 0.6×); ` +
        `service / json_populate_recordset: ${(peer.seconds / service.seconds).toFixed(2)}× ` +
        `(target ≥ 2×)`,
    );
    await againstPeer(postgres, seconds);
    await instances(postgres, seconds);
  } finally {
    await postgres.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
