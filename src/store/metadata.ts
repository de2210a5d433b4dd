/**
 * The service's own metadata inside the DuckDB file: table identities, stable column ids,
 * constraint names, the sequences serial columns draw from, and the template each table
 * was made from. (Templates themselves are in templates.ts.)
 *
 * DuckDB's catalog holds the real tables; these rows hold what it cannot: ids that survive
 * renames and never get reused, and the constraint names users chose.
 *
 * @module
 */

import { listValue } from "@duckdb/node-api";
import type {
  Column,
  Constraints,
  ForeignKey,
  KeyConstraint,
  Table,
  TableRef,
  TemplateRef,
} from "../catalog/model.ts";
import { RESERVED_SCHEMAS } from "../catalog/names.ts";
import type { Session } from "./database.ts";
import { plainBooleans } from "./defaults.ts";
import { quoteIdent } from "./sql.ts";

/** The internal schema; never listed, never addressable through the API. */
export const META = "_table_service";

/** Bumped when the metadata layout changes, so an old file can be migrated or refused. */
const FORMAT_VERSION = "1";

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

/** A table's row in the metadata. */
export interface TableRow {
  readonly id: number;
  readonly schema: string;
  readonly name: string;
}

/** Constraint kinds as stored. */
export type ConstraintKind = "PRIMARY KEY" | "UNIQUE" | "FOREIGN KEY";

/** A constraint to record, columns by id. */
export interface ConstraintRecord {
  readonly kind: ConstraintKind;
  readonly name: string;
  readonly columnIds: readonly number[];
  readonly refTableId?: number;
  readonly refColumnId?: number;
}

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

/** The tables of one schema. */
export async function tablesInSchema(session: Session, schema: string): Promise<TableRow[]> {
  const rows = await session.rows(
    `SELECT table_id, schema_name, table_name FROM ${META}.tables
     WHERE lower(schema_name) = lower($1) ORDER BY lower(table_name)`,
    [schema],
  );
  return rows.map(toTableRow);
}

/** A page of tables, optionally confined to one schema or to a set of visible schemas. */
export async function pageOfTables(
  session: Session,
  filter: { schema?: string; visibleSchemas?: readonly string[] },
  offset: number,
  limit: number,
): Promise<{ rows: TableRow[]; total: number }> {
  if (filter.visibleSchemas?.length === 0) return { rows: [], total: 0 };
  const where = `($1::VARCHAR IS NULL OR lower(schema_name) = lower($1))
    AND ($2::VARCHAR[] IS NULL OR list_contains($2, lower(schema_name)))`;
  const visible = filter.visibleSchemas
    ? listValue(filter.visibleSchemas.map((s) => s.toLowerCase()))
    : null;
  const values = [filter.schema ?? null, visible];
  const count = await session.rows(
    `SELECT count(*) AS n FROM ${META}.tables WHERE ${where}`,
    values,
  );
  const rows = await session.rows(
    `SELECT table_id, schema_name, table_name FROM ${META}.tables WHERE ${where}
     ORDER BY lower(schema_name), lower(table_name) LIMIT $3 OFFSET $4`,
    [...values, limit, offset],
  );
  return { rows: rows.map(toTableRow), total: Number(count[0]!.n) };
}

/** Records a new table with its columns (ids 1..n) and constraints; returns the table id. */
export async function recordTable(
  session: Session,
  ref: TableRef,
  columnNames: readonly string[],
): Promise<number> {
  const rows = await session.rows(
    `INSERT INTO ${META}.tables (table_id, schema_name, table_name, next_column_id)
     VALUES (nextval('${META}.table_ids')::INTEGER, $1, $2, $3) RETURNING table_id`,
    [ref.schema, ref.name, columnNames.length + 1],
  );
  const id = rows[0]!.table_id as number;
  if (columnNames.length > 0) {
    await session.run(
      `INSERT INTO ${META}.columns
       SELECT $1, generate_subscripts($2, 1), unnest($2)`,
      [id, listValue([...columnNames])],
    );
  }
  return id;
}

/** Records which template version a table was made from. */
export async function recordOrigin(
  session: Session,
  tableId: number,
  template: TemplateRef,
): Promise<void> {
  await session.run(`INSERT INTO ${META}.table_origins VALUES ($1, $2, $3)`, [
    tableId,
    template.name,
    template.version,
  ]);
}

/** Records a table's constraints, in the given order. */
export async function recordConstraints(
  session: Session,
  tableId: number,
  constraints: readonly ConstraintRecord[],
): Promise<void> {
  for (const [position, c] of constraints.entries()) {
    await session.run(
      `INSERT INTO ${META}.constraints VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        tableId,
        position,
        c.kind,
        c.name,
        listValue([...c.columnIds]),
        c.refTableId ?? null,
        c.refColumnId ?? null,
      ],
    );
  }
}

/** Records the sequence a serial column draws from, so it is dropped with the table. */
export async function recordSequence(
  session: Session,
  tableId: number,
  columnId: number,
  schema: string,
  sequence: string,
): Promise<void> {
  await session.run(`INSERT INTO ${META}.sequences VALUES ($1, $2, $3, $4)`, [
    tableId,
    columnId,
    schema,
    sequence,
  ]);
}

/** A sequence a serial column draws from. */
export interface SequenceRow {
  readonly columnId: number;
  readonly schema: string;
  readonly name: string;
}

/** The sequences owned by a table's serial columns. */
export async function sequencesOf(session: Session, tableId: number): Promise<SequenceRow[]> {
  const rows = await session.rows(
    `SELECT column_id, schema_name, sequence_name FROM ${META}.sequences WHERE table_id = $1
     ORDER BY column_id`,
    [tableId],
  );
  return rows.map((r) => ({
    columnId: r.column_id as number,
    schema: r.schema_name as string,
    name: r.sequence_name as string,
  }));
}

/** Forgets the sequences of some columns of a table. */
export async function forgetSequences(
  session: Session,
  tableId: number,
  columnIds: readonly number[],
): Promise<void> {
  if (columnIds.length === 0) return;
  await session.run(
    `DELETE FROM ${META}.sequences WHERE table_id = $1 AND list_contains($2, column_id)`,
    [tableId, listValue([...columnIds])],
  );
}

/** The next value of a sequence when it is next drawn from. */
export async function nextSequenceValue(
  session: Session,
  schema: string,
  name: string,
): Promise<bigint> {
  const rows = await session.rows(
    `SELECT coalesce(last_value + increment_by, start_value) AS next FROM duckdb_sequences()
     WHERE database_name = current_database() AND schema_name = $1 AND sequence_name = $2`,
    [schema, name],
  );
  return BigInt(rows[0]?.next as bigint | number ?? 1);
}

/** Whether a sequence of that name exists in the schema. */
export async function sequenceExists(
  session: Session,
  schema: string,
  name: string,
): Promise<boolean> {
  const rows = await session.rows(
    `SELECT 1 FROM duckdb_sequences()
     WHERE database_name = current_database() AND lower(schema_name) = lower($1)
       AND lower(sequence_name) = lower($2)`,
    [schema, name],
  );
  return rows.length > 0;
}

/** Tables other than `tableId` whose foreign keys reference it, with the constraint names. */
export async function referencingTables(
  session: Session,
  tableIds: readonly number[],
): Promise<{ schema: string; name: string; constraint: string }[]> {
  // An empty list has no element type DuckDB could bind.
  if (tableIds.length === 0) return [];
  const rows = await session.rows(
    `SELECT t.schema_name, t.table_name, k.constraint_name
     FROM ${META}.constraints k JOIN ${META}.tables t ON t.table_id = k.table_id
     WHERE k.kind = 'FOREIGN KEY' AND list_contains($1, k.ref_table_id)
       AND NOT list_contains($1, k.table_id)
     ORDER BY lower(t.schema_name), lower(t.table_name), k.position`,
    [listValue([...tableIds])],
  );
  return rows.map((r) => ({
    schema: r.schema_name as string,
    name: r.table_name as string,
    constraint: r.constraint_name as string,
  }));
}

/** A foreign key as stored: columns by id. */
export interface ForeignKeyRow {
  readonly tableId: number;
  readonly name: string;
  readonly columnId: number;
  readonly refTableId: number;
  readonly refColumnId: number;
}

/** The columns a {@link ForeignKeyRow} is read from. */
const FOREIGN_KEY_COLUMNS =
  "table_id, constraint_name, column_ids[1] AS column_id, ref_table_id, ref_column_id";

/** The foreign keys of other tables that reference `tableId`. */
export async function foreignKeysInto(
  session: Session,
  tableId: number,
): Promise<ForeignKeyRow[]> {
  const rows = await session.rows(
    `SELECT ${FOREIGN_KEY_COLUMNS} FROM ${META}.constraints
     WHERE kind = 'FOREIGN KEY' AND ref_table_id = $1 AND table_id <> $1
     ORDER BY table_id, position`,
    [tableId],
  );
  return rows.map(toForeignKeyRow);
}

/** A table's own foreign keys, columns and targets by id. */
export async function foreignKeysOf(session: Session, tableId: number): Promise<ForeignKeyRow[]> {
  const rows = await session.rows(
    `SELECT ${FOREIGN_KEY_COLUMNS} FROM ${META}.constraints
     WHERE kind = 'FOREIGN KEY' AND table_id = $1 ORDER BY position`,
    [tableId],
  );
  return rows.map(toForeignKeyRow);
}

/**
 * A table's foreign keys with the names their targets have now, from the metadata alone,
 * so it works while the table itself is dropped for a rebuild.
 */
export async function foreignKeyTargets(
  session: Session,
  tableId: number,
): Promise<{ name: string; target: TableRef; refColumn: string }[]> {
  const rows = await session.rows(
    `SELECT k.constraint_name, r.schema_name, r.table_name, rc.column_name
     FROM ${META}.constraints k
     JOIN ${META}.tables r ON r.table_id = k.ref_table_id
     JOIN ${META}.columns rc ON rc.table_id = k.ref_table_id AND rc.column_id = k.ref_column_id
     WHERE k.table_id = $1 AND k.kind = 'FOREIGN KEY' ORDER BY k.position`,
    [tableId],
  );
  return rows.map((r) => ({
    name: r.constraint_name as string,
    target: { schema: r.schema_name as string, name: r.table_name as string },
    refColumn: r.column_name as string,
  }));
}

/**
 * Rewrites a table's metadata after an update: its address, its columns (ids kept, new
 * ones given) and the next column id; its constraints are forgotten, to be recorded anew.
 */
export async function rewriteTable(
  session: Session,
  tableId: number,
  ref: TableRef,
  columns: readonly { readonly id: number; readonly name: string }[],
  nextColumnId: number,
): Promise<void> {
  await session.run(
    `UPDATE ${META}.tables SET schema_name = $2, table_name = $3, next_column_id = $4
     WHERE table_id = $1`,
    [tableId, ref.schema, ref.name, nextColumnId],
  );
  await session.run(`DELETE FROM ${META}.columns WHERE table_id = $1`, [tableId]);
  if (columns.length > 0) {
    await session.run(
      `INSERT INTO ${META}.columns SELECT $1, unnest($2), unnest($3)`,
      [tableId, listValue(columns.map((c) => c.id)), listValue(columns.map((c) => c.name))],
    );
  }
  await session.run(`DELETE FROM ${META}.constraints WHERE table_id = $1`, [tableId]);
}

/** The id the next new column of a table gets. */
export async function nextColumnId(session: Session, tableId: number): Promise<number> {
  const rows = await session.rows(
    `SELECT next_column_id FROM ${META}.tables WHERE table_id = $1`,
    [tableId],
  );
  return rows[0]!.next_column_id as number;
}

/** The ids of the tables a table's foreign keys reference. */
export async function referencedTableIds(session: Session, tableId: number): Promise<number[]> {
  const rows = await session.rows(
    `SELECT DISTINCT ref_table_id FROM ${META}.constraints
     WHERE table_id = $1 AND kind = 'FOREIGN KEY' AND ref_table_id <> $1`,
    [tableId],
  );
  return rows.map((r) => r.ref_table_id as number);
}

/** The metadata rows of the given table ids that exist, in id order. */
export async function tablesById(session: Session, ids: readonly number[]): Promise<TableRow[]> {
  if (ids.length === 0) return [];
  const rows = await session.rows(
    `SELECT table_id, schema_name, table_name FROM ${META}.tables
     WHERE list_contains($1, table_id) ORDER BY table_id`,
    [listValue([...ids])],
  );
  return rows.map(toTableRow);
}

/** Forgets tables: their rows in every metadata table. */
export async function forgetTables(session: Session, tableIds: readonly number[]): Promise<void> {
  if (tableIds.length === 0) return;
  const ids = listValue([...tableIds]);
  for (const table of ["constraints", "sequences", "table_origins", "columns", "tables"]) {
    await session.run(`DELETE FROM ${META}.${table} WHERE list_contains($1, table_id)`, [ids]);
  }
}

/**
 * Full response-form tables for the given metadata rows, in the same order: three queries
 * whatever the number of tables.
 */
export async function describeTables(
  session: Session,
  tables: readonly TableRow[],
): Promise<Table[]> {
  if (tables.length === 0) return [];
  const ids = listValue(tables.map((t) => t.id));
  // pragma_table_info per table beats scanning duckdb_columns() for every table in the file.
  const info = tables.map((t, i) =>
    `SELECT ${Number(t.id)}::INTEGER AS table_id, cid, name, type, "notnull", dflt_value
     FROM pragma_table_info($${i + 1})`
  ).join(" UNION ALL ");
  const columnRows = await session.rows(
    `SELECT m.table_id, m.column_id, c.name AS column_name, c.type AS data_type,
       c.dflt_value AS column_default, NOT c."notnull" AS is_nullable
     FROM (${info}) c
     JOIN ${META}.columns m ON m.table_id = c.table_id AND m.column_name = c.name
     ORDER BY c.table_id, c.cid`,
    tables.map((t) => `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`),
  );
  const constraintRows = await session.rows(
    `SELECT k.table_id, k.kind, k.constraint_name, k.column_ids,
       r.schema_name AS ref_schema, r.table_name AS ref_table, rc.column_name AS ref_column
     FROM ${META}.constraints k
     LEFT JOIN ${META}.tables r ON r.table_id = k.ref_table_id
     LEFT JOIN ${META}.columns rc ON rc.table_id = k.ref_table_id AND rc.column_id = k.ref_column_id
     WHERE list_contains($1, k.table_id)
     ORDER BY k.table_id, k.position`,
    [ids],
  );
  const originRows = await session.rows(
    `SELECT table_id, template_name, template_version FROM ${META}.table_origins
     WHERE list_contains($1, table_id)`,
    [ids],
  );
  const origins = new Map(originRows.map((r) => [r.table_id as number, {
    name: r.template_name as string,
    version: r.template_version as string,
  }]));

  const columns = new Map<number, Column[]>();
  for (const r of columnRows) {
    const list = columns.get(r.table_id as number) ?? [];
    list.push({
      id: r.column_id as number,
      name: r.column_name as string,
      type: r.data_type as string,
      default: r.column_default === null ? null : plainBooleans(r.column_default as string),
      is_nullable: r.is_nullable as boolean,
    });
    columns.set(r.table_id as number, list);
  }

  const constraints = new Map<
    number,
    { pk: KeyConstraint | null; unique: KeyConstraint[]; fks: ForeignKey[] }
  >();
  for (const r of constraintRows) {
    const tableId = r.table_id as number;
    const entry = constraints.get(tableId) ?? { pk: null, unique: [], fks: [] };
    const names = new Map((columns.get(tableId) ?? []).map((c) => [c.id, c.name]));
    const columnNames = (r.column_ids as number[]).map((id) => names.get(id) ?? `#${id}`);
    const name = r.constraint_name as string;
    if (r.kind === "PRIMARY KEY") entry.pk = { name, columns: columnNames };
    else if (r.kind === "UNIQUE") entry.unique.push({ name, columns: columnNames });
    else {
      entry.fks.push({
        name,
        column: columnNames[0]!,
        reference_table: r.ref_table as string,
        reference_column: r.ref_column as string,
        reference_schema: r.ref_schema as string,
      });
    }
    constraints.set(tableId, entry);
  }

  return tables.map((t) => {
    const c = constraints.get(t.id);
    const tableConstraints: Constraints = {
      primary_key: c?.pk ?? null,
      unique: c?.unique ?? [],
      foreign_keys: c?.fks ?? [],
    };
    return {
      name: t.name,
      schema: t.schema,
      columns: columns.get(t.id) ?? [],
      constraints: tableConstraints,
      ...(origins.has(t.id) ? { template: origins.get(t.id) } : {}),
    };
  });
}

function toTableRow(row: Record<string, unknown>): TableRow {
  return {
    id: row.table_id as number,
    schema: row.schema_name as string,
    name: row.table_name as string,
  };
}

function toForeignKeyRow(row: Record<string, unknown>): ForeignKeyRow {
  return {
    tableId: row.table_id as number,
    name: row.constraint_name as string,
    columnId: row.column_id as number,
    refTableId: row.ref_table_id as number,
    refColumnId: row.ref_column_id as number,
  };
}
