/**
 * `deno task bench blocks [rows] [rounds]`: what DuckDB's block size costs on an ordinary
 * table. The service runs on database files created with 256 KiB blocks (DuckDB's default)
 * and with 16 KiB blocks (`DUCKDB_BLOCK_SIZE=16KiB`), alternating, since the machine is shared: each
 * round loads the 8-column JSON of the loading benchmark by POST /records, restarts (a
 * checkpointed file), then reads pages and exports the whole table as CSV.
 *
 * @module
 */

import { TestServer } from "../tests/helpers/server.ts";
import { COLUMNS, writeJsonRows } from "./generate.ts";

const SIZES = [256 * 1024, 16 * 1024];
const PAGE_READS = 40;
const PAGE_ROWS = 100;

interface Round {
  readonly load: number;
  readonly pageP50: number;
  readonly exportSeconds: number;
  readonly fileMb: number;
}

/** Runs `curl` with `args`, returning the status and the body (none when it goes to a file). */
async function curl(args: string[]): Promise<{ status: string; body: string }> {
  const output = await new Deno.Command("curl", {
    args: ["-s", "-w", "\n%{http_code}", ...args],
    stdout: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const at = text.lastIndexOf("\n");
  return { status: text.slice(at + 1), body: text.slice(0, at) };
}

async function round(file: string, rows: number, blockBytes: number): Promise<Round> {
  const server = await TestServer.spawn({
    LOG_LEVEL: "error",
    DUCKDB_BLOCK_SIZE: String(blockBytes),
  });
  try {
    const table = "blocks_bench";
    const created = await server.request("POST", `table/${table}`, {
      body: { table: { columns: COLUMNS.map((c) => ({ name: c.name, type: c.type })) } },
    });
    if (created.status !== 200) throw new Error(`Cannot create the table: ${created.text}`);
    const auth = ["-H", `Authorization: Bearer ${server.token}`];
    let started = performance.now();
    const loaded = await curl([
      ...auth,
      "-X",
      "POST",
      "-T",
      file,
      "-H",
      "Content-Type: application/json",
      `${server.base}/api/v1/table/${table}/records`,
    ]);
    const load = (performance.now() - started) / 1000;
    if (loaded.status !== "200" || JSON.parse(loaded.body).inserted !== rows) {
      throw new Error(`The load failed: ${loaded.status} ${loaded.body.slice(0, 300)}`);
    }
    // A restart checkpoints: the reads below are of the table as a file holds it.
    await server.restart();
    const fileMb = (await Deno.stat(`${server.dataDir}/tables.duckdb`)).size / 1e6;
    const pages: number[] = [];
    for (let i = 0; i < PAGE_READS; i++) {
      const offset = Math.floor((i / PAGE_READS) * (rows - PAGE_ROWS));
      started = performance.now();
      const page = await server.request(
        "GET",
        `table/${table}/records?offset=${offset}&limit=${PAGE_ROWS}`,
      );
      pages.push(performance.now() - started);
      if (page.status !== 200) throw new Error(`A page read failed: ${page.text}`);
    }
    pages.sort((a, b) => a - b);
    started = performance.now();
    const exported = await curl([
      ...auth,
      "-o",
      "/dev/null",
      `${server.base}/api/v1/table/${table}/records/csv`,
    ]);
    const exportSeconds = (performance.now() - started) / 1000;
    if (exported.status !== "200") throw new Error(`The export failed: ${exported.status}`);
    return { load, pageP50: pages[Math.floor(pages.length / 2)]!, exportSeconds, fileMb };
  } finally {
    await server.dispose();
  }
}

/** Runs the comparison and prints each round and the medians' ratios. */
export async function blocks(rows = 1_000_000, rounds = 3): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "table-service-bench-" });
  try {
    const file = `${dir}/rows.json`;
    await writeJsonRows(file, rows);
    console.log(`\nBlock size: ${rows.toLocaleString("en")} rows × 8 columns, ${rounds} rounds`);
    console.log("block    load s  page p50 ms  export s  file MB");
    const results = new Map<number, Round[]>(SIZES.map((size) => [size, []]));
    for (let i = 0; i < rounds; i++) {
      for (const size of i % 2 ? [...SIZES].reverse() : SIZES) {
        const result = await round(file, rows, size);
        results.get(size)!.push(result);
        console.log(
          `${`${size / 1024}K`.padEnd(6)} ${result.load.toFixed(2).padStart(7)} ${
            result.pageP50.toFixed(2).padStart(12)
          } ${result.exportSeconds.toFixed(2).padStart(9)} ${result.fileMb.toFixed(1).padStart(8)}`,
        );
      }
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
    const of = (size: number, key: keyof Round) => median(results.get(size)!.map((r) => r[key]));
    const [large, small] = SIZES as [number, number];
    for (const key of ["load", "pageP50", "exportSeconds", "fileMb"] as const) {
      console.log(`${key}: 16K / 256K median ${(of(small, key) / of(large, key)).toFixed(3)}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
