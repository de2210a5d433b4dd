/**
 * File uploads: a 100,000-row xlsx through `upload/excel` against pandas only reading it,
 * and a 1,000,000-row CSV through `upload/csv` against DuckDB's read_csv in process.
 *
 * @module
 */

import { DuckDBInstance } from "@duckdb/node-api";
import * as XLSX from "xlsx";
import { TestServer } from "../tests/helpers/server.ts";
import { COLUMNS, CSV_HEADER, csvLine, row } from "./generate.ts";
import { memory } from "./measure.ts";

const DEFINITION = { table: { columns: COLUMNS.map((c) => ({ name: c.name, type: c.type })) } };

/** Writes an xlsx of `count` generated rows, compressed as Excel writes it. */
function writeXlsx(path: string, count: number): number {
  const rows: unknown[][] = [COLUMNS.map((c) => c.name)];
  for (let i = 0; i < count; i++) {
    const r = row(i);
    rows.push(COLUMNS.map((c) => c.name === "at" ? new Date(r.at as string) : r[c.name]));
  }
  const sheet = XLSX.utils.aoa_to_sheet(rows, {
    cellDates: true,
    UTC: true,
    dateNF: "yyyy-mm-dd hh:mm:ss",
  });
  const book = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(book, sheet, "Data");
  const bytes = new Uint8Array(
    XLSX.write(book, { type: "array", bookType: "xlsx", compression: true }) as ArrayBuffer,
  );
  Deno.writeFileSync(path, bytes);
  return bytes.length;
}

/** Writes a CSV of `count` generated rows with a header line. */
async function writeCsv(path: string, count: number): Promise<number> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const encoder = new TextEncoder();
  let size = 0;
  let buffer = CSV_HEADER + "\n";
  for (let i = 0; i < count; i++) {
    buffer += csvLine(i) + "\n";
    if (buffer.length > 1 << 20 || i === count - 1) {
      const bytes = encoder.encode(buffer);
      size += bytes.length;
      for (let written = 0; written < bytes.length;) {
        written += await file.write(bytes.subarray(written));
      }
      buffer = "";
    }
  }
  file.close();
  return size;
}

/** One upload through curl, as a client sends it; seconds and the server's peak RSS. */
async function upload(
  server: TestServer,
  route: "excel" | "csv",
  table: string,
  file: string,
  rows: number,
): Promise<number> {
  const body = `${Deno.makeTempFileSync({ suffix: ".json" })}`;
  Deno.writeTextFileSync(body, JSON.stringify(DEFINITION));
  const started = performance.now();
  const output = await new Deno.Command("curl", {
    args: [
      "-s",
      "-X",
      "POST",
      "-F",
      `body=<${body};type=application/json`,
      "-F",
      `file=@${file}`,
      "-H",
      `Authorization: Bearer ${server.token}`,
      "-w",
      "\n%{http_code}",
      `${server.base}/api/v1/table/${table}/upload/${route}`,
    ],
    stdout: "piped",
  }).output();
  const seconds = (performance.now() - started) / 1000;
  Deno.removeSync(body);
  const text = new TextDecoder().decode(output.stdout);
  const status = text.slice(text.lastIndexOf("\n") + 1);
  const answer = JSON.parse(text.slice(0, text.lastIndexOf("\n")));
  if (status !== "200" || answer.inserted !== rows) {
    throw new Error(`upload/${route} failed: ${status} ${JSON.stringify(answer).slice(0, 300)}`);
  }
  return seconds;
}

/** pandas.read_excel of the file, timed inside Python: reading only, nothing stored. */
async function pandasRead(file: string): Promise<number | string> {
  const script = "import sys, time\nimport pandas\nt = time.perf_counter()\n" +
    "frame = pandas.read_excel(sys.argv[1])\nprint(time.perf_counter() - t, len(frame))";
  try {
    const output = await new Deno.Command("/usr/bin/python3", {
      args: ["-c", script, file],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) return new TextDecoder().decode(output.stderr).trim().split("\n").at(-1)!;
    return Number(new TextDecoder().decode(output.stdout).split(" ")[0]);
  } catch (error) {
    return String(error);
  }
}

/** DuckDB's read_csv of the file into the same table, in process: the CSV limit. */
async function duckdbCsv(dir: string, file: string): Promise<number> {
  const path = `${dir}/csv-limit-${crypto.randomUUID()}.duckdb`;
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    await connection.run(
      `CREATE TABLE t (${COLUMNS.map((c) => `"${c.name}" ${c.type}`).join(", ")})`,
    );
    const started = performance.now();
    await connection.run(`INSERT INTO t SELECT * FROM read_csv('${file}')`);
    return (performance.now() - started) / 1000;
  } finally {
    connection.closeSync();
    instance.closeSync();
    await Deno.remove(path).catch(() => {});
    await Deno.remove(`${path}.wal`).catch(() => {});
  }
}

/** Runs the file benchmarks and prints their tables. */
export async function files(sheetRows = 100_000, csvRows = 1_000_000): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "table-service-bench-files-" });
  try {
    const xlsx = `${dir}/rows.xlsx`;
    const xlsxBytes = writeXlsx(xlsx, sheetRows);
    console.log(
      `\nSpreadsheet: ${sheetRows.toLocaleString("en")} rows × 8 columns, xlsx of ${
        (xlsxBytes / 1e6).toFixed(1)
      } MB`,
    );
    const pandas = await pandasRead(xlsx);
    const server = await TestServer.spawn({ LOG_LEVEL: "error" });
    let excel: number;
    let excelRss: number;
    const startRss = memory(server.pid, "VmRSS");
    try {
      excel = Math.min(
        await upload(server, "excel", "sheet_a", xlsx, sheetRows),
        await upload(server, "excel", "sheet_b", xlsx, sheetRows),
      );
      excelRss = memory(server.pid, "VmHWM");
    } finally {
      await server.dispose();
    }
    console.log("what                                      seconds        rate");
    console.log(
      `service: POST upload/excel, end to end     ${excel.toFixed(2).padStart(7)}  ${
        Math.round(sheetRows / excel).toLocaleString("en").padStart(9)
      } rows/s`,
    );
    if (typeof pandas === "string") console.log(`peer: pandas not measured: ${pandas}`);
    else {
      console.log(
        `peer: pandas.read_excel, reading only      ${pandas.toFixed(2).padStart(7)}  ${
          Math.round(sheetRows / pandas).toLocaleString("en").padStart(9)
        } rows/s`,
      );
      console.log(`pandas / service: ${(pandas / excel).toFixed(2)} (target ≥ 2)`);
    }
    console.log(
      `server peak RSS: ${excelRss.toFixed(0)} MB (at start ${startRss.toFixed(0)} MB)`,
    );

    const csv = `${dir}/rows.csv`;
    const csvBytes = await writeCsv(csv, csvRows);
    console.log(
      `\nCSV: ${csvRows.toLocaleString("en")} rows × 8 columns (${(csvBytes / 1e6).toFixed(0)} MB)`,
    );
    const limits: number[] = [];
    const services: number[] = [];
    let csvRss = 0;
    for (let round = 0; round < 2; round++) {
      limits.push(await duckdbCsv(dir, csv));
      const csvServer = await TestServer.spawn({ LOG_LEVEL: "error" });
      try {
        services.push(await upload(csvServer, "csv", "csv_rows", csv, csvRows));
        csvRss = Math.max(csvRss, memory(csvServer.pid, "VmHWM"));
      } finally {
        await csvServer.dispose();
      }
    }
    const limit = Math.min(...limits);
    const service = Math.min(...services);
    console.log("what                                      seconds        rate");
    console.log(
      `limit: DuckDB read_csv in process          ${limit.toFixed(2).padStart(7)}  ${
        Math.round(csvRows / limit).toLocaleString("en").padStart(9)
      } rows/s`,
    );
    console.log(
      `service: POST upload/csv, end to end       ${service.toFixed(2).padStart(7)}  ${
        Math.round(csvRows / service).toLocaleString("en").padStart(9)
      } rows/s`,
    );
    console.log(`service / limit: ${(limit / service).toFixed(2)} (target ≥ 0.70)`);
    console.log(`server peak RSS: ${csvRss.toFixed(0)} MB`);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
