/**
 * The analytics benchmark's table, made three times from the same rows: by DuckDB in this
 * process (the baseline's own file), in the service through its API, and in PostgreSQL 15 by
 * COPY. DuckDB generates the rows and writes them out as CSV files; the service and
 * PostgreSQL load those files, so all three hold the same rows.
 *
 * @module
 */

import type { DuckDBConnection } from "@duckdb/node-api";
import type { Postgres } from "../tests/helpers/postgres.ts";

/** The 8 columns: a BIGINT key, a small-int group, a double, text, a date and a boolean. */
export const ANALYTICS_COLUMNS = [
  { name: "id", type: "BIGINT", pg: "bigint" },
  { name: "qty", type: "SMALLINT", pg: "smallint" },
  { name: "price", type: "DOUBLE", pg: "double precision" },
  { name: "name", type: "VARCHAR", pg: "text" },
  { name: "city", type: "VARCHAR", pg: "text" },
  { name: "day", type: "DATE", pg: "date" },
  { name: "active", type: "BOOLEAN", pg: "boolean" },
  { name: "note", type: "VARCHAR", pg: "text" },
] as const;

/** Rows per CSV file: each upload stays well under the service's 1 GiB body limit. */
const ROWS_PER_FILE = 1_000_000;

/**
 * Row `i` (from 1) as DuckDB computes it. qty and price come from a hash so that neither
 * follows the key; the rest is cheap text of realistic length.
 */
const ROW_SQL = `SELECT
    i AS id,
    (1 + hash(i) % 100)::SMALLINT AS qty,
    (hash(i * 7 + 3) % 1000000) / 100.0 AS price,
    'name-' || i AS name,
    ['Berlin', 'Paris', 'Tokyo', 'Lima', 'Zürich', 'Montréal'][1 + i % 6] AS city,
    DATE '2020-01-01' + (i % 2000)::INTEGER AS day,
    i % 3 = 0 AS active,
    'note number ' || i || ' with some text' AS note
  FROM range(1, $rows + 1) AS r(i)`;

function columnList(kind: "type" | "pg"): string {
  return ANALYTICS_COLUMNS.map((c) => `"${c.name}" ${c[kind]}`).join(", ");
}

/** Creates `t` keyed by `id` in `connection` and fills it with `rows` generated rows. */
export async function generateTable(connection: DuckDBConnection, rows: number): Promise<void> {
  await connection.run(`CREATE TABLE t (${columnList("type")}, PRIMARY KEY (id))`);
  await connection.run(`INSERT INTO t ${ROW_SQL.replace("$rows", String(rows))}`);
  await connection.run("CHECKPOINT");
}

/**
 * Writes the table's rows as CSV files with a header line, {@link ROWS_PER_FILE} each, in
 * key order; returns their paths.
 */
export async function writeCsvFiles(
  connection: DuckDBConnection,
  dir: string,
  rows: number,
): Promise<string[]> {
  const paths: string[] = [];
  for (let first = 1; first <= rows; first += ROWS_PER_FILE) {
    const path = `${dir}/rows-${paths.length}.csv`;
    const last = Math.min(rows, first + ROWS_PER_FILE - 1);
    await connection.run(
      `COPY (SELECT * FROM t WHERE id BETWEEN ${first} AND ${last} ORDER BY id) ` +
        `TO '${path}' (FORMAT csv, HEADER true)`,
    );
    await Deno.chmod(path, 0o644);
    paths.push(path);
  }
  return paths;
}

/** What {@link loadService} needs of the running service. */
export interface ServiceTarget {
  readonly base: string;
  readonly token: string;
}

/** Creates `t` (keyed by `id`) through the API and appends every file by `upload/csv`. */
export async function loadService(service: ServiceTarget, files: string[]): Promise<void> {
  const created = await fetch(`${service.base}/api/v1/table/t`, {
    method: "POST",
    headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      table: {
        columns: ANALYTICS_COLUMNS.map((c) => ({ name: c.name, type: c.type })),
        constraints: { primary_key: { columns: ["id"] } },
      },
    }),
  });
  if (created.status !== 200) throw new Error(`Cannot create t: ${await created.text()}`);
  for (const file of files) {
    // curl streams the file from disk as a client would.
    const output = await new Deno.Command("curl", {
      args: [
        "-s",
        "-X",
        "POST",
        "-F",
        `file=@${file};type=text/csv`,
        "-H",
        `Authorization: Bearer ${service.token}`,
        "-w",
        "\n%{http_code}",
        `${service.base}/api/v1/table/t/upload/csv?if_exists=append`,
      ],
      stdout: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout);
    const status = text.slice(text.lastIndexOf("\n") + 1);
    if (status !== "200") throw new Error(`upload/csv of ${file} failed: ${status} ${text}`);
  }
}

/** Loads the files into `t` of `postgres` by COPY, then adds the key and runs VACUUM ANALYZE. */
export async function loadPostgres(postgres: Postgres, files: string[]): Promise<void> {
  await postgres.sql(`CREATE TABLE t (${columnList("pg")})`);
  for (const file of files) {
    await postgres.sql(`COPY t FROM '${file}' WITH (FORMAT csv, HEADER true)`);
  }
  // The key after the rows, as a bulk load into PostgreSQL is done; the table ends the same.
  await postgres.sql("ALTER TABLE t ADD PRIMARY KEY (id)");
  await postgres.sql("VACUUM ANALYZE t");
}
