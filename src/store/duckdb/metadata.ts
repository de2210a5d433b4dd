/**
 * The service's own metadata inside the DuckDB file: table identities, stable column ids,
 * constraint names, the sequences serial columns draw from, and the template each table
 * was made from. (Templates themselves are in shared/templates.ts; constraints, sequences and
 * table descriptions are read and written by metadata_constraints.ts, metadata_sequences.ts
 * and metadata_describe.ts.)
 *
 * DuckDB's catalog holds the real tables; these rows hold what it cannot: ids that survive
 * renames and never get reused, and the constraint names users chose.
 *
 * @module
 */

import { pageOfTables, tablesById, toTableRow } from "../shared/metadata_tables.ts";
import type { TableRow } from "../shared/core.ts";
import type { TableRef } from "../../catalog/model.ts";
import { RESERVED_SCHEMAS } from "../../catalog/names.ts";
import { META } from "../shared/metadata_rows.ts";
import type { Session } from "./database.ts";

export { META } from "../shared/metadata_rows.ts";
export { pageOfTables, tablesById };

/** Bumped when the metadata layout changes, so an old file can be migrated or refused. */
export const FORMAT_VERSION = "1";

/**
 * Name of the hidden column a zero-column table carries, because DuckDB needs at least
 * one. It starts with a control character, which no user column name may contain.
 */
export const PLACEHOLDER_COLUMN = "\u0001empty";

const BOOTSTRAP = [
  `CREATE SCHEMA IF NOT EXISTS ${META}`,
  `CREATE SEQUENCE IF NOT EXISTS ${META}.table_ids START 1`,
  `CREATE TABLE IF NOT EXISTS ${META}.info (key VARCHAR NOT NULL, value VARCHAR NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ${META}.tables (
    table_id INTEGER NOT NULL,
    schema_name VARCHAR NOT NULL,
    table_name VARCHAR NOT NULL,
    next_column_id INTEGER NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
  `CREATE TABLE IF NOT EXISTS ${META}.columns (
    table_id INTEGER NOT NULL,
    column_id INTEGER NOT NULL,
    column_name VARCHAR NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ${META}.constraints (
    table_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    kind VARCHAR NOT NULL,
    constraint_name VARCHAR NOT NULL,
    column_ids INTEGER[] NOT NULL,
    ref_table_id INTEGER,
    ref_column_id INTEGER)`,
  `CREATE TABLE IF NOT EXISTS ${META}.sequences (
    table_id INTEGER NOT NULL,
    column_id INTEGER NOT NULL,
    schema_name VARCHAR NOT NULL,
    sequence_name VARCHAR NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ${META}.table_origins (
    table_id INTEGER NOT NULL,
    template_name VARCHAR NOT NULL,
    template_version VARCHAR NOT NULL)`,
  `CREATE SEQUENCE IF NOT EXISTS ${META}.template_ids START 1`,
  `CREATE TABLE IF NOT EXISTS ${META}.templates (
    template_id INTEGER NOT NULL,
    name VARCHAR NOT NULL,
    major INTEGER NOT NULL,
    minor INTEGER NOT NULL,
    compatibility VARCHAR NOT NULL,
    definition VARCHAR NOT NULL,
    column_types VARCHAR NOT NULL,
    created_at VARCHAR NOT NULL)`,
  // Answers to writes sent with an Idempotency-Key, kept for replay (see idempotency.ts).
  `CREATE TABLE IF NOT EXISTS ${META}.idempotency_keys (
    scope VARCHAR NOT NULL,
    key VARCHAR NOT NULL,
    fingerprint VARCHAR NOT NULL,
    answer VARCHAR NOT NULL,
    created_at BIGINT NOT NULL)`,
  `CREATE SCHEMA IF NOT EXISTS public`,
];

/** Creates the metadata schema and `public` on a new file; checks the format of an old one. */
export async function bootstrap(session: Session): Promise<void> {
  await session.run("BEGIN TRANSACTION");
  try {
    for (const statement of BOOTSTRAP) await session.run(statement);
    const rows = await session.rows(`SELECT value FROM ${META}.info WHERE key = 'format'`);
    if (rows.length === 0) {
      await session.run(`INSERT INTO ${META}.info VALUES ('format', $1)`, [FORMAT_VERSION]);
    } else if (rows[0]!.value !== FORMAT_VERSION) {
      throw new Error(
        `The database file has metadata format ${rows[0]!.value}, not ${FORMAT_VERSION}`,
      );
    }
    await session.run("COMMIT");
  } catch (error) {
    await session.run("ROLLBACK").catch(() => {});
    throw error;
  }
}

export type { TableRow };

/** The stored spelling of a schema, case-insensitively, or undefined; internal ones never match. */
export async function findSchema(session: Session, name: string): Promise<string | undefined> {
  if (RESERVED_SCHEMAS.has(name.toLowerCase())) return undefined;
  const rows = await session.rows(
    `SELECT schema_name FROM duckdb_schemas()
     WHERE database_name = current_database() AND NOT internal AND lower(schema_name) = lower($1)`,
    [name],
  );
  return rows[0]?.schema_name as string | undefined;
}

/** Every user schema, in name order. */
export async function allSchemas(session: Session): Promise<string[]> {
  const rows = await session.rows(
    `SELECT schema_name FROM duckdb_schemas()
     WHERE database_name = current_database() AND NOT internal
     ORDER BY lower(schema_name)`,
  );
  return rows.map((r) => r.schema_name as string).filter((s) =>
    !RESERVED_SCHEMAS.has(s.toLowerCase())
  );
}

/** A table's metadata row, looked up case-insensitively. */
export async function findTable(session: Session, ref: TableRef): Promise<TableRow | undefined> {
  const rows = await session.rows(
    `SELECT table_id, schema_name, table_name FROM ${META}.tables
     WHERE lower(schema_name) = lower($1) AND lower(table_name) = lower($2)`,
    [ref.schema, ref.name],
  );
  return rows[0] && toTableRow(rows[0]);
}
