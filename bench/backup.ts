/**
 * `deno task bench backup [rows]`: a backup of a table of `rows` rows (10M by default) taken
 * through the service while writers go on, against DuckDB's own `COPY FROM DATABASE` of the same
 * file in a process of its own measured in the same run; and the 10-row inserts a second during
 * the backup against those just before it.
 *
 * @module
 */

import { DuckDBInstance } from "@duckdb/node-api";
import { TestServer } from "../tests/helpers/server.ts";
import { createKeyedTable, writeCsvRows } from "./generate.ts";

/** Clients sending 10-row inserts, one after another each. */
const WRITERS = 4;
/** How long the inserts are counted before the backup. */
const BASELINE_MS = 10_000;

/** Runs `WRITERS` insert loops until `stop()`; resolves to the inserts acknowledged. */
function insertLoops(server: TestServer): { stop: () => Promise<number> } {
  let running = true;
  let next = 0;
  const loops = Array.from({ length: WRITERS }, async () => {
    let done = 0;
    while (running) {
      const body = Array.from({ length: 10 }, () => ({ n: next++ }));
      const answer = await server.request("POST", "table/small/records", { body });
      if (answer.status !== 200) throw new Error(`Insert failed: ${answer.text}`);
      done++;
    }
    return done;
  });
  return {
    stop: async () => {
      running = false;
      return (await Promise.all(loops)).reduce((a, b) => a + b, 0);
    },
  };
}

/** Prints the backup's time against DuckDB's own copy, and inserts during it against before. */
export async function backup(rows: number): Promise<void> {
  const server = await TestServer.spawn({ LOG_LEVEL: "error", MAX_UPLOAD_BYTES: "8GiB" });
  const dir = await Deno.makeTempDir({ prefix: "bench-backup-" });
  try {
    await createKeyedTable(server, server.token, "big");
    const csv = `${dir}/rows.csv`;
    await writeCsvRows(csv, rows);
    const form = new FormData();
    form.append("file", new Blob([await Deno.readFile(csv)], { type: "text/csv" }), "rows.csv");
    const loaded = await server.request("POST", "table/big/upload/csv?if_exists=append", {
      body: form,
    });
    if (loaded.status !== 200) throw new Error(`Load failed: ${loaded.text}`);
    await Deno.remove(csv);
    const small = await server.request("POST", "table/small", {
      body: { table: { columns: [{ name: "n", type: "bigint" }] } },
    });
    if (small.status !== 200) throw new Error(`Cannot create small: ${small.text}`);

    const before = insertLoops(server);
    await new Promise((resolve) => setTimeout(resolve, BASELINE_MS));
    const baselineInserts = await before.stop();

    const during = insertLoops(server);
    const started = performance.now();
    const taken = await server.request("POST", "backup");
    const backupMs = performance.now() - started;
    const duringInserts = await during.stop();
    if (taken.status !== 200) throw new Error(`Backup failed: ${taken.text}`);
    await server.stop();

    // DuckDB's own copy of the same file, the service stopped, in this process.
    const instance = await DuckDBInstance.create(`${server.dataDir}/tables.duckdb`);
    const connection = await instance.connect();
    const copyStarted = performance.now();
    await connection.run(`ATTACH '${dir}/copy.duckdb' AS copy`);
    await connection.run("COPY FROM DATABASE tables TO copy");
    await connection.run("DETACH copy");
    const copyMs = performance.now() - copyStarted;
    connection.closeSync();
    instance.closeSync();

    const perSecond = (count: number, ms: number) => count / (ms / 1000);
    const baselineRate = perSecond(baselineInserts, BASELINE_MS);
    const duringRate = perSecond(duringInserts, backupMs);
    console.log(`\nBackup of ${rows.toLocaleString("en")} rows (8 columns), ${WRITERS} writers`);
    console.log("measure                                        value        ratio");
    console.log(
      `COPY FROM DATABASE, DuckDB alone (baseline)  ${(copyMs / 1000).toFixed(2).padStart(7)} s`,
    );
    console.log(
      `POST /backup under writers                   ${(backupMs / 1000).toFixed(2).padStart(7)} s` +
        `   ${(backupMs / copyMs).toFixed(2)}× the baseline (target ≤ 1.5×)`,
    );
    console.log(
      `10-row inserts/s before (baseline)           ${baselineRate.toFixed(0).padStart(7)}`,
    );
    console.log(
      `10-row inserts/s during the backup           ${duringRate.toFixed(0).padStart(7)}` +
        `     ${(duringRate / baselineRate).toFixed(2)}× the baseline (target ≥ 0.5×)`,
    );
    console.log(`backup file: ${taken.body.bytes} bytes`);
  } finally {
    await server.dispose();
    await Deno.remove(dir, { recursive: true });
  }
}
