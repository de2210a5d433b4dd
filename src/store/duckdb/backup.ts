/**
 * Backups of the DuckDB file: a consistent copy made while the service goes on, and the
 * checks a file passes before it is restored.
 *
 * @module
 */

import type { DuckDBConnection } from "@duckdb/node-api";
import type { Session } from "./database.ts";
import { type DatabaseOptions, openInstance } from "./database_open.ts";
import { FORMAT_VERSION, META } from "./metadata.ts";
import { quoteIdent, quoteLiteral } from "./sql.ts";

/**
 * What the backup is attached as while it is written: a hyphen, so no user schema (whose
 * names are SQL identifiers) can be mistaken for it.
 */
const TARGET = quoteIdent("table-service-backup");

/**
 * Writes the whole database into the new file `path`, inside the options' `backupDir`. One
 * statement copies every schema, table, sequence (at its current value) and constraint, so
 * the copy is of one snapshot: every commit before it began is in it, none after, and writers
 * and readers go on meanwhile. Detaching checkpoints the copy: it is one file, complete once
 * this resolves. On failure the file may be left in part; the caller removes it.
 */
export async function copyDatabase(session: Session, path: string): Promise<void> {
  await session.run(`ATTACH ${quoteLiteral(path)} AS ${TARGET}`);
  try {
    const [row] = await session.rows("SELECT current_database() AS name");
    // Not inside BEGIN: within an explicit transaction DuckDB's copy sets an option, which the
    // locked configuration refuses. On its own it is one transaction all the same.
    await session.run(`COPY FROM DATABASE ${quoteIdent(String(row!.name))} TO ${TARGET}`);
  } finally {
    await session.run(`DETACH ${TARGET}`);
  }
}

/** The metadata tables a whole file has (see metadata.ts). */
const METADATA_TABLES = [
  "info",
  "tables",
  "columns",
  "constraints",
  "sequences",
  "table_origins",
  "templates",
  "idempotency_keys",
];

/**
 * Checks that the file at `path` is one the service can serve, opening it read-only: a whole
 * DuckDB file (as at start-up) whose metadata is complete, of this version, and names only
 * tables and sequences that exist. Throws with the first reason it is not.
 */
export async function checkBackupFile(path: string, options: DatabaseOptions): Promise<void> {
  // A missing file would be a new, empty database.
  if (!await Deno.stat(path).then((stat) => stat.isFile, () => false)) {
    throw new Error("there is no such file");
  }
  const instance = await openInstance({ ...options, path, backupDir: undefined }, true);
  const connection = await instance.connect();
  try {
    await checkMetadata(connection);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

async function checkMetadata(connection: DuckDBConnection): Promise<void> {
  const rows = async (sql: string) => (await connection.runAndReadAll(sql)).getRowObjectsJS();
  const present = new Set(
    (await rows(
      `SELECT table_name FROM duckdb_tables() WHERE schema_name = ${quoteLiteral(META)}`,
    )).map((row) => String(row.table_name)),
  );
  const missing = METADATA_TABLES.filter((name) => !present.has(name));
  if (missing.length > 0) {
    throw new Error(`it is not the service's database: its metadata lacks ${missing.join(", ")}`);
  }
  const [format] = await rows(`SELECT value FROM ${META}.info WHERE key = 'format'`);
  if (format?.value !== FORMAT_VERSION) {
    throw new Error(
      `its metadata has format ${format?.value ?? "none"}, not ${FORMAT_VERSION}`,
    );
  }
  const lostTables = await rows(
    `SELECT schema_name, table_name FROM ${META}.tables
     EXCEPT SELECT schema_name, table_name FROM duckdb_tables()`,
  );
  const lostSequences = await rows(
    `SELECT schema_name, sequence_name FROM ${META}.sequences
     EXCEPT SELECT schema_name, sequence_name FROM duckdb_sequences()`,
  );
  const lost = [
    ...lostTables.map((row) => `table "${row.schema_name}.${row.table_name}"`),
    ...lostSequences.map((row) => `sequence "${row.schema_name}.${row.sequence_name}"`),
  ];
  if (lost.length > 0) {
    throw new Error(
      `its metadata names ${lost.length} missing ${lost.length === 1 ? "object" : "objects"}, ` +
        `such as ${lost[0]}`,
    );
  }
}

/**
 * Opens the file at `path` read-write and closes it again, which replays its write-ahead log
 * into it: afterwards the file alone is the database, fit to be moved. Fails, touching
 * nothing, when another process holds the file.
 */
export async function settleFile(path: string, options: DatabaseOptions): Promise<void> {
  const instance = await openInstance({ ...options, path, backupDir: undefined });
  const connection = await instance.connect();
  try {
    await connection.run("CHECKPOINT");
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
