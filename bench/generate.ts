/**
 * Generated inputs for the benchmarks.
 *
 * @module
 */

import type { TestServer } from "../tests/helpers/server.ts";

/** The 8-column shape of the loading benchmarks. */
export const COLUMNS = [
  { name: "id", type: "BIGINT", pg: "bigint" },
  { name: "name", type: "VARCHAR", pg: "varchar" },
  { name: "city", type: "VARCHAR", pg: "varchar" },
  { name: "price", type: "DOUBLE", pg: "double precision" },
  { name: "qty", type: "INTEGER", pg: "integer" },
  { name: "active", type: "BOOLEAN", pg: "boolean" },
  { name: "at", type: "TIMESTAMP WITH TIME ZONE", pg: "timestamptz" },
  { name: "note", type: "VARCHAR", pg: "varchar" },
] as const;

/** {@link COLUMNS} as the column list of a CREATE TABLE, in DuckDB's types or PostgreSQL's. */
export function columnList(types: "type" | "pg"): string {
  return COLUMNS.map((c) => `"${c.name}" ${c[types]}`).join(", ");
}

/** Creates `name` in `server` with {@link COLUMNS}, keyed by `id`. */
export async function createKeyedTable(
  server: TestServer,
  token: string,
  name: string,
): Promise<void> {
  const created = await server.request("POST", `table/${name}`, {
    token,
    body: {
      table: {
        columns: COLUMNS.map((c) => ({ name: c.name, type: c.type })),
        constraints: { primary_key: { columns: ["id"] } },
      },
    },
  });
  if (created.status !== 200) throw new Error(`Cannot create the table: ${created.text}`);
}

const CITIES = ["Berlin", "Paris", "Tokyo", "Lima", "Zürich", "Montréal"];

/** One generated row. */
export function row(i: number): Record<string, unknown> {
  return {
    id: i,
    name: `name-${i}`,
    city: CITIES[i % CITIES.length],
    price: Math.round(i * 37.5) / 100,
    qty: i % 1000,
    active: i % 3 === 0,
    at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    note: `note number ${i} with some text`,
  };
}

/** The header line of a CSV of generated rows. */
export const CSV_HEADER = COLUMNS.map((c) => c.name).join(",");

/** Row `i` of {@link row} as one CSV line in the columns' order, its id replaced by `id`. */
export function csvLine(i: number, id = i): string {
  const r: Record<string, unknown> = { ...row(i), id };
  return COLUMNS.map((c) => {
    const v = r[c.name];
    return typeof v === "string" && /[,"\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v;
  }).join(",");
}

/** Writes a JSON array of `count` rows to `path`; returns its size in bytes. */
export async function writeJsonRows(path: string, count: number): Promise<number> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const encoder = new TextEncoder();
  let size = 0;
  let buffer = "[";
  for (let i = 0; i < count; i++) {
    buffer += (i === 0 ? "" : ",") + JSON.stringify(row(i));
    if (buffer.length > 1 << 20 || i === count - 1) {
      if (i === count - 1) buffer += "]";
      const bytes = encoder.encode(buffer);
      size += bytes.length;
      for (let written = 0; written < bytes.length;) {
        written += await file.write(bytes.subarray(written));
      }
      buffer = "";
    }
  }
  if (count === 0) {
    await file.write(encoder.encode("[]"));
    size = 2;
  }
  file.close();
  return size;
}

/** Writes a CSV of `count` rows, {@link CSV_HEADER} first, to `path`. */
export async function writeCsvRows(path: string, count: number): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const encoder = new TextEncoder();
  let buffer = `${CSV_HEADER}\n`;
  for (let i = 0; i < count; i++) {
    buffer += `${csvLine(i)}\n`;
    if (buffer.length > 1 << 20 || i === count - 1) {
      const bytes = encoder.encode(buffer);
      for (let written = 0; written < bytes.length;) {
        written += await file.write(bytes.subarray(written));
      }
      buffer = "";
    }
  }
  file.close();
}
