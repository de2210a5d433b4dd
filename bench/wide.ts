/**
 * `deno task bench wide [columns] [rows]`: tables of 2,000 columns × 10,000 rows (by default)
 * at the service's real defaults (`DUCKDB_MEMORY_LIMIT` unset: half the machine's memory) from
 * CSV, XLSX and JSON, each with and without a definition, then a page, an export and a `PUT` of
 * the CSV one. Each step's status, seconds and the peak RSS of the service's process while it
 * ran, against its RSS at rest before the first step (the baseline).
 *
 * @module
 */

import { zip } from "../tests/helpers/zip.ts";
import { defaultMemoryBytes } from "../src/store/duckdb/mod.ts";
import { TestServer, uploadForm } from "../tests/helpers/server.ts";
import { memory } from "./measure.ts";

const MIB = 1024 ** 2;

function names(columns: number): string[] {
  return Array.from({ length: columns }, (_, i) => `c${i}`);
}

/** Every other column text, the rest integers: what a wide export of a sheet looks like. */
function value(row: number, column: number): number | string {
  return column % 2 === 0 ? row * 7 + column : `t${row}_${column}`;
}

function csv(columns: number, rows: number): Uint8Array {
  const lines = [names(columns).join(",")];
  for (let r = 0; r < rows; r++) {
    lines.push(Array.from({ length: columns }, (_, c) => value(r, c)).join(","));
  }
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

function json(columns: number, rows: number, definition?: unknown): string {
  const keys = names(columns);
  const body = Array.from(
    { length: rows },
    (_, r) => JSON.stringify(Object.fromEntries(keys.map((k, c) => [k, value(r, c)]))),
  );
  const table = definition === undefined ? "" : `"table":${JSON.stringify(definition)},`;
  return `{${table}"data":[${body.join(",")}]}`;
}

/** Excel's name of 0-based column `n`: A, …, Z, AA, … */
function columnName(n: number): string {
  let name = "";
  for (let i = n + 1; i > 0; i = Math.floor((i - 1) / 26)) {
    name = String.fromCharCode(65 + (i - 1) % 26) + name;
  }
  return name;
}

/**
 * An xlsx of the same values, its sheet's XML written as bytes a row at a time: SheetJS builds
 * a sheet's XML as one string, and 20 million cells are longer than a string may be.
 */
async function xlsx(columns: number, rows: number): Promise<Uint8Array> {
  const encoder = new TextEncoder();
  const refs = Array.from({ length: columns }, (_, c) => columnName(c));
  const cell = (c: number, r: number, v: string | number) =>
    typeof v === "number"
      ? `<c r="${refs[c]}${r}"><v>${v}</v></c>`
      : `<c r="${refs[c]}${r}" t="inlineStr"><is><t>${v}</t></is></c>`;
  const parts: Uint8Array[] = [encoder.encode(
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
      '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>' +
      `<row r="1">${names(columns).map((name, c) => cell(c, 1, name)).join("")}</row>`,
  )];
  for (let r = 0; r < rows; r++) {
    const line = Array.from({ length: columns }, (_, c) => cell(c, r + 2, value(r, c))).join("");
    parts.push(encoder.encode(`<row r="${r + 2}">${line}</row>`));
  }
  parts.push(encoder.encode("</sheetData></worksheet>"));
  const sheet = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  parts.reduce((at, part) => (sheet.set(part, at), at + part.length), 0);
  return await zip({
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?>' +
      '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
      '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
      "</Types>",
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?>' +
      '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>' +
      "</Relationships>",
    "xl/workbook.xml": '<?xml version="1.0" encoding="UTF-8"?>' +
      '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ' +
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">' +
      '<sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>',
    "xl/_rels/workbook.xml.rels": '<?xml version="1.0" encoding="UTF-8"?>' +
      '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>' +
      "</Relationships>",
    "xl/worksheets/sheet1.xml": sheet,
  });
}

function definition(columns: number) {
  return {
    columns: names(columns).map((name, c) => ({
      name,
      type: c % 2 === 0 ? "bigint" : "varchar",
    })),
  };
}

/** Runs `work`, sampling `pid`'s RSS every 50 ms: its status, seconds and peak RSS in MiB. */
async function measured(
  pid: number,
  work: () => Promise<{ status: number; text: string }>,
): Promise<{ status: number; seconds: number; peak: number; text: string }> {
  let peak = memory(pid, "VmRSS");
  const sampler = setInterval(() => peak = Math.max(peak, memory(pid, "VmRSS")), 50);
  const started = performance.now();
  try {
    const { status, text } = await work();
    return { status, seconds: (performance.now() - started) / 1000, peak, text };
  } finally {
    clearInterval(sampler);
  }
}

/** Prints each wide step's status, time and peak RSS at the service's real defaults. */
export async function wide(columns: number, rows: number): Promise<void> {
  const server = await TestServer.spawn({
    LOG_LEVEL: "error",
    DUCKDB_MEMORY_LIMIT: "",
    MAX_UPLOAD_BYTES: "4GiB",
  });
  try {
    const rest = memory(server.pid, "VmRSS");
    const limit = await defaultMemoryBytes() / MIB;
    console.log(
      `\nWide tables: ${columns.toLocaleString("en")} columns × ${rows.toLocaleString("en")} ` +
        `rows at the defaults (DUCKDB_MEMORY_LIMIT unset: ${
          limit.toFixed(0)
        } MiB, half the machine's); ` +
        `RSS at rest ${rest.toFixed(0)} MiB`,
    );
    console.log("step                               status  seconds  peak RSS MiB  × at rest");
    const print = (label: string, m: Awaited<ReturnType<typeof measured>>) => {
      console.log(
        `${label.padEnd(34)} ${String(m.status).padStart(6)} ${m.seconds.toFixed(1).padStart(8)}` +
          ` ${m.peak.toFixed(0).padStart(13)} ${(m.peak / rest).toFixed(1).padStart(9)}×` +
          (m.status === 200 ? "" : `  ${m.text.slice(0, 120)}`),
      );
    };
    const csvBytes = csv(columns, rows);
    let xlsxBytes: Uint8Array | undefined;
    const sheet = () => xlsxBytes!;
    const def = definition(columns);
    const steps: [string, () => Promise<{ status: number; text: string }>][] = [
      ["CSV, inferred", () =>
        server.request("POST", "table/csv_inferred/upload/csv", {
          body: uploadForm(csvBytes, "w.csv"),
        })],
      ["CSV, with a definition", () =>
        server.request("POST", "table/csv_defined/upload/csv", {
          body: uploadForm(csvBytes, "w.csv", { table: def }),
        })],
      ["JSON, inferred", () =>
        server.request("POST", "table/json_inferred/upload/json", {
          body: json(columns, rows),
          headers: { "content-type": "application/json" },
        })],
      ["JSON, with a definition", () =>
        server.request("POST", "table/json_defined/upload/json", {
          body: json(columns, rows, def),
          headers: { "content-type": "application/json" },
        })],
      ["XLSX, inferred", () =>
        server.request("POST", "table/xlsx_inferred/upload/excel", {
          body: uploadForm(sheet(), "w.xlsx"),
        })],
      ["XLSX, with a definition", () =>
        server.request("POST", "table/xlsx_defined/upload/excel", {
          body: uploadForm(sheet(), "w.xlsx", { table: def }),
        })],
      ["a page of 100 records", () => server.request("GET", "table/csv_defined/records?limit=100")],
      ["export as CSV", async () => {
        const answer = await fetch(`${server.base}/api/v1/table/csv_defined/records/csv`, {
          headers: { authorization: `Bearer ${server.token}` },
        });
        const bytes = (await answer.arrayBuffer()).byteLength;
        return { status: answer.status, text: `${bytes} bytes` };
      }],
      ["PUT: every integer column to text", async () => {
        const { table } = (await server.request("GET", "table/csv_defined")).body;
        return await server.request("PUT", "table/csv_defined", {
          body: {
            table: {
              ...table,
              columns: table.columns.map((c: object) => ({ ...c, type: "varchar" })),
            },
          },
        });
      }],
    ];
    for (const [label, work] of steps) {
      if (label.startsWith("XLSX")) xlsxBytes ??= await xlsx(columns, rows); // Before its timing.
      print(label, await measured(server.pid, work));
    }
  } finally {
    await server.dispose();
  }
}
