/**
 * Loading 1,000,000 JSON rows: the service end to end, against the limit (DuckDB's own
 * read_json in this process, no HTTP) and a peer (PostgreSQL 15 inserting the array the way
 * PostgREST does, with json_populate_recordset). All three in one run, on one machine.
 *
 * @module
 */

import { DuckDBInstance } from "@duckdb/node-api";
// deno-lint-ignore no-import-prefix -- a tool of benchmarks, kept out of the import map (deno.dev.lock)
import pg from "npm:pg@^8.23.1";
import { TestServer } from "../tests/helpers/server.ts";
import { columnList, COLUMNS, writeJsonRows } from "./generate.ts";
import { startPostgres } from "../tests/helpers/postgres.ts";
import { memory } from "./measure.ts";

/** Result of one measured load. */
export interface Measured {
  readonly seconds: number;
  readonly rows: number;
}

/** DuckDB's read_json of the file into the same table, in process: the limit. */
export async function duckdbLimit(dir: string, file: string, rows: number): Promise<Measured> {
  const path = `${dir}/limit-${crypto.randomUUID()}.duckdb`;
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    await connection.run(
      `CREATE TABLE t (${columnList("type")})`,
    );
    const columns = COLUMNS.map((c) => `'${c.name}': '${c.type}'`).join(", ");
    const started = performance.now();
    await connection.run(
      `INSERT INTO t SELECT * FROM read_json('${file}', format='array', columns={${columns}})`,
    );
    const seconds = (performance.now() - started) / 1000;
    const count = await connection.runAndReadAll("SELECT count(*) AS n FROM t");
    if (Number(count.getRowObjectsJS()[0]!.n) !== rows) throw new Error("The limit run lost rows");
    return { seconds, rows };
  } finally {
    connection.closeSync();
    instance.closeSync();
    await Deno.remove(path).catch(() => {});
    await Deno.remove(`${path}.wal`).catch(() => {});
  }
}

/**
 * The service (with `env`, e.g. `DATABASE_URL`): POST /records of the whole file, end to end;
 * also its peak memory.
 */
export async function serviceLoad(
  file: string,
  rows: number,
  env: Record<string, string> = {},
): Promise<Measured & { peakRssMb: number; startRssMb: number }> {
  const server = await TestServer.spawn({ LOG_LEVEL: "error", ...env });
  try {
    const table = `bench_${crypto.randomUUID().slice(0, 8)}`;
    const created = await server.request("POST", `table/${table}`, {
      body: { table: { columns: COLUMNS.map((c) => ({ name: c.name, type: c.type })) } },
    });
    if (created.status !== 200) throw new Error(`Cannot create the table: ${created.text}`);
    const startRssMb = memory(server.pid, "VmRSS");
    // curl streams the file (-T) as a client would; Deno's own fetch of a file stream was
    // the slower party here, measuring the client instead of the service.
    const started = performance.now();
    const output = await new Deno.Command("curl", {
      args: [
        "-s",
        "-X",
        "POST",
        "-T",
        file,
        "-H",
        `Authorization: Bearer ${server.token}`,
        "-H",
        "Content-Type: application/json",
        "-w",
        "\n%{http_code}",
        `${server.base}/api/v1/table/${table}/records`,
      ],
      stdout: "piped",
    }).output();
    const seconds = (performance.now() - started) / 1000;
    const text = new TextDecoder().decode(output.stdout);
    const status = text.slice(text.lastIndexOf("\n") + 1);
    const answer = JSON.parse(text.slice(0, text.lastIndexOf("\n")));
    if (status !== "200" || answer.inserted !== rows) {
      throw new Error(`The service load failed: ${status} ${JSON.stringify(answer).slice(0, 300)}`);
    }
    return { seconds, rows, peakRssMb: memory(server.pid, "VmHWM"), startRssMb };
  } finally {
    await server.dispose();
  }
}

/** PostgreSQL 15: INSERT … SELECT * FROM json_populate_recordset(null::t, $1), as PostgREST does. */
export async function postgresPeer(
  dir: string,
  file: string,
  rows: number,
): Promise<Measured | string> {
  const postgres = await startPostgres(`${dir}/pg`, "bench");
  if (typeof postgres === "string") return postgres;
  try {
    await postgres.sql(
      `CREATE TABLE t (${columnList("pg")})`,
    );
    // The body travels from a client as the bind parameter $1 of one INSERT, as PostgREST
    // sends it; the clock runs from reading the file to the server's answer, like the
    // service's, which includes its HTTP transfer.
    const client = new pg.Client({
      host: postgres.socketDir,
      port: postgres.port,
      user: postgres.user,
      database: "postgres",
    });
    await client.connect();
    let seconds: number;
    try {
      const started = performance.now();
      const body = await Deno.readTextFile(file);
      await client.query(
        "INSERT INTO t SELECT * FROM json_populate_recordset(null::t, $1::json)",
        [body],
      );
      seconds = (performance.now() - started) / 1000;
    } finally {
      await client.end();
    }
    const count = await postgres.sql("SELECT count(*) FROM t");
    if (Number(count.trim()) !== rows) {
      throw new Error(`PostgreSQL loaded ${count.trim()} rows, not ${rows}`);
    }
    return { seconds, rows };
  } finally {
    await postgres.stop();
  }
}

/** Runs the loading benchmark and prints its table. */
export async function loading(rows = 1_000_000): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "table-service-bench-" });
  await Deno.chmod(dir, 0o755);
  try {
    const file = `${dir}/rows.json`;
    const bytes = await writeJsonRows(file, rows);
    await Deno.chmod(file, 0o644);
    console.log(
      `\nLoading ${rows.toLocaleString("en")} rows × 8 columns of JSON (${
        (bytes / 1e6).toFixed(0)
      } MB)`,
    );
    // Alternate the two DuckDB runs twice and keep each one's best: the machine is shared.
    const limits: Measured[] = [];
    const services: Awaited<ReturnType<typeof serviceLoad>>[] = [];
    for (let round = 0; round < 2; round++) {
      limits.push(await duckdbLimit(dir, file, rows));
      services.push(await serviceLoad(file, rows));
    }
    const limit = limits.reduce((a, b) => a.seconds <= b.seconds ? a : b);
    const service = services.reduce((a, b) => a.seconds <= b.seconds ? a : b);
    const peer = await postgresPeer(dir, file, rows);
    const rate = (m: Measured) =>
      `${Math.round(m.rows / m.seconds).toLocaleString("en").padStart(10)} rows/s`;
    console.log("what                                         seconds        rate");
    console.log(
      `limit: DuckDB read_json in process          ${limit.seconds.toFixed(2).padStart(7)}  ${
        rate(limit)
      }`,
    );
    console.log(
      `service: POST /records over HTTP            ${service.seconds.toFixed(2).padStart(7)}  ${
        rate(service)
      }`,
    );
    if (typeof peer === "string") console.log(`peer: PostgreSQL 15 not measured: ${peer}`);
    else {
      console.log(
        `peer: PostgreSQL 15 json_populate_recordset ${peer.seconds.toFixed(2).padStart(7)}  ${
          rate(peer)
        }`,
      );
    }
    console.log(`service / limit: ${(limit.seconds / service.seconds).toFixed(2)} (target ≥ 0.70)`);
    if (typeof peer !== "string") {
      console.log(`service / peer:  ${(peer.seconds / service.seconds).toFixed(2)} (target ≥ 4)`);
    }
    console.log(
      `server peak RSS: ${Math.max(...services.map((s) => s.peakRssMb)).toFixed(0)} MB ` +
        `(at start ${service.startRssMb.toFixed(0)} MB; target ≤ 400 MB)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
