/**
 * The service's own metadata in the database, in the schema `_table_service`: table
 * identities, stable column ids, constraint names, the sequences serial columns draw from,
 * the template each table was made from, templates and kept answers. (Constraints and
 * sequences are written by ../shared/constraint_records.ts and ../shared/metadata_rows.ts;
 * descriptions are read by metadata_describe.ts.)
 *
 * PostgreSQL's catalog holds the real tables; these rows hold what it cannot: ids that
 * survive renames and are never reused, and the constraint names users chose.
 *
 * @module
 */

import { pageOfTables, rewriteTable, toTableRow } from "../shared/metadata_tables.ts";
import type { TableRow } from "../shared/core.ts";
import { existingSchema as existingSchemaIn } from "../shared/schemas.ts";
import type { TableRef } from "../../catalog/model.ts";
import { RESERVED_SCHEMAS } from "../../catalog/names.ts";
import { META } from "../shared/metadata_rows.ts";
import type { Prepared, Session } from "./database.ts";
import { BOOTSTRAP_LOCK, takeLocks } from "./locks.ts";

export { META } from "../shared/metadata_rows.ts";
export { pageOfTables, rewriteTable };

/** Bumped when the metadata layout changes, so an old database can be migrated or refused. */
const FORMAT_VERSION = "1";

const BOOTSTRAP = [
  `CREATE SCHEMA IF NOT EXISTS ${META}`,
  `CREATE TABLE IF NOT EXISTS ${META}.info (key text PRIMARY KEY, value text NOT NULL)`,
  // An identity never gives an id twice, even after a rollback or a drop.
  `CREATE TABLE IF NOT EXISTS ${META}.tables (
    table_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schema_name text NOT NULL,
    table_name text NOT NULL,
    next_column_id integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now())`,
  `CREATE UNIQUE INDEX IF NOT EXISTS tables_by_name
    ON ${META}.tables (lower(schema_name), lower(table_name))`,
  `CREATE TABLE IF NOT EXISTS ${META}.columns (
    table_id integer NOT NULL REFERENCES ${META}.tables ON DELETE CASCADE,
    column_id integer NOT NULL,
    column_name text NOT NULL,
    PRIMARY KEY (table_id, column_id))`,
  `CREATE TABLE IF NOT EXISTS ${META}.constraints (
    table_id integer NOT NULL REFERENCES ${META}.tables ON DELETE CASCADE,
    position integer NOT NULL,
    kind text NOT NULL,
    constraint_name text NOT NULL,
    column_ids integer[] NOT NULL,
    ref_table_id integer,
    ref_column_id integer,
    PRIMARY KEY (table_id, position))`,
  `CREATE TABLE IF NOT EXISTS ${META}.sequences (
    table_id integer NOT NULL REFERENCES ${META}.tables ON DELETE CASCADE,
    column_id integer NOT NULL,
    schema_name text NOT NULL,
    sequence_name text NOT NULL,
    PRIMARY KEY (table_id, column_id))`,
  `CREATE TABLE IF NOT EXISTS ${META}.table_origins (
    table_id integer PRIMARY KEY REFERENCES ${META}.tables ON DELETE CASCADE,
    template_name text NOT NULL,
    template_version text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ${META}.templates (
    template_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    major integer NOT NULL,
    minor integer NOT NULL,
    compatibility text NOT NULL,
    definition text NOT NULL,
    column_types text NOT NULL,
    created_at text NOT NULL)`,
  `CREATE UNIQUE INDEX IF NOT EXISTS templates_by_version
    ON ${META}.templates (lower(name), major, minor)`,
  // Answers to writes sent with an Idempotency-Key, kept for replay (see idempotency.ts).
  `CREATE TABLE IF NOT EXISTS ${META}.idempotency_keys (
    scope text NOT NULL,
    key text NOT NULL,
    fingerprint text NOT NULL,
    answer text NOT NULL,
    created_at bigint NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS idempotency_keys_by_key
    ON ${META}.idempotency_keys (scope, key, created_at)`,
  `CREATE SCHEMA IF NOT EXISTS public`,
];

/**
 * Creates the metadata schema and `public` in a new database and checks the format of an
 * old one, in the session's transaction under an advisory lock: `CREATE … IF NOT EXISTS` is
 * not safe against itself, so two instances starting at once take turns.
 */
export async function bootstrap(session: Session): Promise<void> {
  await takeLocks(session, [BOOTSTRAP_LOCK]);
  for (const statement of BOOTSTRAP) await session.run(statement);
  await session.run(
    `INSERT INTO ${META}.info VALUES ('format', $1) ON CONFLICT (key) DO NOTHING`,
    [FORMAT_VERSION],
  );
  const rows = await session.rows(`SELECT value FROM ${META}.info WHERE key = 'format'`);
  if (rows[0]?.value !== FORMAT_VERSION) {
    throw new Error(`The database has metadata format ${rows[0]?.value}, not ${FORMAT_VERSION}`);
  }
}

export type { TableRow };

/** Schemas PostgreSQL keeps for itself, besides the reserved names. */
const SYSTEM_SCHEMAS = `nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'`;

/** The stored spelling of an existing schema's name; 404 when there is none. */
export function existingSchema(session: Session, name: string): Promise<string> {
  return existingSchemaIn({ findSchema }, session, name);
}

/** The stored spelling of a schema, case-insensitively, or undefined; internal ones never match. */
export async function findSchema(session: Session, name: string): Promise<string | undefined> {
  if (RESERVED_SCHEMAS.has(name.toLowerCase())) return undefined;
  const rows = await session.rows(
    `SELECT nspname FROM pg_namespace WHERE ${SYSTEM_SCHEMAS} AND lower(nspname) = lower($1)
     ORDER BY nspname LIMIT 1`,
    [name],
  );
  return rows[0]?.nspname as string | undefined;
}

/** Every user schema, in name order. */
export async function allSchemas(session: Session): Promise<string[]> {
  const rows = await session.rows(
    `SELECT nspname FROM pg_namespace WHERE ${SYSTEM_SCHEMAS} ORDER BY lower(nspname), nspname`,
  );
  return rows.map((r) => r.nspname as string).filter((s) => !RESERVED_SCHEMAS.has(s.toLowerCase()));
}

/** A table's metadata row, looked up case-insensitively. */
export async function findTable(session: Session, ref: TableRef): Promise<TableRow | undefined> {
  const rows = await session.rows(FIND_TABLE, [ref.schema, ref.name]);
  return rows[0] && toTableRow(rows[0]);
}

// Looked up by every request that names a table: prepared, planned once per connection.
const FIND_TABLE: Prepared = {
  name: "find_table",
  text: `SELECT table_id, schema_name, table_name FROM ${META}.tables
     WHERE lower(schema_name) = lower($1) AND lower(table_name) = lower($2)`,
};
