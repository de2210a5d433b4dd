/**
 * Describes tables in response form from PostgreSQL's catalog and the metadata together:
 * names, types (`format_type()`, PostgreSQL's canonical names), defaults and nullability from
 * `pg_attribute`; ids, constraint names and template origins from the metadata.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { assembleTables } from "../shared/table_descriptions.ts";
import type { Batched, Prepared, Session } from "./database.ts";
import { META, type TableRow } from "./metadata.ts";
import { toTableRow } from "../shared/metadata_tables.ts";
import { sequenceDefault } from "./sql.ts";

/**
 * Full response-form tables for the given metadata rows, in the same order: one query
 * whatever the number of tables. Run it in the transaction that found the rows, so that a
 * concurrent drop cannot fall between.
 */
export async function describeTables(
  session: Session,
  tables: readonly TableRow[],
): Promise<Table[]> {
  if (tables.length === 0) return [];
  const [row] = await session.rows(
    DESCRIBE,
    [tables.map((t) => t.id), tables.map((t) => t.schema), tables.map((t) => t.name)],
  );
  return assembled(tables, row!);
}

/**
 * The statement that finds the table `ref` names (case-insensitively) and describes it, as a
 * statement of a batch (database.ts); {@link namedTable} reads its one row.
 */
export function describeNamedBatched(ref: TableRef): Batched {
  return { prepared: DESCRIBE_NAMED, args: [ref.schema, ref.name] };
}

/** The table of {@link describeNamedBatched}'s row, or undefined when there is none. */
export function namedTable(row: Record<string, unknown>): Table | undefined {
  return namedDescription(row)?.table;
}

/** A table as described, with the stamp that tells whether the description still holds. */
export interface Described {
  readonly table: Table;
  /** The id of the table's metadata row. */
  readonly id: number;
  readonly stamp: string;
}

/** {@link describeNamedBatched}'s row as a {@link Described}, or undefined for no table. */
export function namedDescription(row: Record<string, unknown>): Described | undefined {
  const found = (row.tables as Record<string, unknown>[]).map(toTableRow);
  return found.length === 0
    ? undefined
    : { table: assembled(found, row)[0]!, id: found[0]!.id, stamp: row.stamp as string };
}

/**
 * The statements, for a batch after the table's locks, that fail (22P02, their message
 * {@link isStale}) unless `described`, what `ref` named, still holds: one for each table its
 * stamp names. The table described is found by `ref` again, as PostgreSQL folds the name,
 * and must be the row stamped; each table its foreign keys name is read by its id. The
 * tables a foreign key names change only with the table's own row, so they need not be
 * gathered again: that cost PostgreSQL five times as much.
 */
export function stillDescribedBatched(ref: TableRef, described: Described): Batched[] {
  return described.stamp.split(" ").map((stamped) =>
    stamped.startsWith(`${described.id}:`)
      ? { prepared: STILL_NAMED, args: [ref.schema, ref.name, stamped] }
      : { prepared: STILL_HELD, args: [stamped] }
  );
}

/** Whether `error` is {@link stillDescribedBatched}'s: the description changed. */
export function isStale(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "22P02" &&
    error.message.includes(STALE);
}

function assembled(tables: readonly TableRow[], row: Record<string, unknown>): Table[] {
  const rows = row as Record<"columns" | "constraints" | "origins", Record<string, unknown>[]>;
  return assembleTables(
    tables,
    rows,
    (r) =>
      // A serial column's default is shown as the service writes it on every engine.
      r.sequence_name !== null
        ? sequenceDefault({ schema: r.sequence_schema as string, name: r.sequence_name as string })
        : shownDefault(r.column_default as string | null, r.data_type as string),
  );
}

/**
 * The three row sets of a description, of the tables in relation `t` (`table_id`,
 * `schema_name`, `table_name`), as the columns of one row: each a JSON array of its rows.
 */
function describing(t: string): string {
  const columns = `SELECT m.table_id, m.column_id, a.attname AS column_name,
       format_type(a.atttypid, a.atttypmod) AS data_type,
       pg_get_expr(d.adbin, d.adrelid) AS column_default, NOT a.attnotnull AS is_nullable,
       s.schema_name AS sequence_schema, s.sequence_name
     FROM ${t}
     JOIN pg_namespace n ON n.nspname = t.schema_name
     JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = t.table_name
     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     JOIN ${META}.columns m ON m.table_id = t.table_id AND m.column_name = a.attname
     LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
     LEFT JOIN ${META}.sequences s ON s.table_id = m.table_id AND s.column_id = m.column_id
     ORDER BY t.table_id, a.attnum`;
  const constraints = `SELECT k.table_id, k.kind, k.constraint_name, k.column_ids,
       r.schema_name AS ref_schema, r.table_name AS ref_table, rc.column_name AS ref_column
     FROM ${t} JOIN ${META}.constraints k ON k.table_id = t.table_id
     LEFT JOIN ${META}.tables r ON r.table_id = k.ref_table_id
     LEFT JOIN ${META}.columns rc ON rc.table_id = k.ref_table_id AND rc.column_id = k.ref_column_id
     ORDER BY k.table_id, k.position`;
  const origins = `SELECT o.table_id, o.template_name, o.template_version
     FROM ${t} JOIN ${META}.table_origins o ON o.table_id = t.table_id`;
  return Object.entries({ columns, constraints, origins }).map(([name, sql]) =>
    // Aggregated in the order the query gives: PostgreSQL keeps a subquery's ORDER BY.
    `(SELECT coalesce(json_agg(r), '[]') FROM (${sql}) AS r) AS ${name}`
  ).join(", ");
}

// Every request describes the tables it touches: prepared, planned once per connection, and
// one round trip.
const DESCRIBE: Prepared = {
  name: "describe_tables",
  text: `SELECT ${
    describing(
      `(SELECT DISTINCT * FROM unnest($1::integer[], $2::text[], $3::text[])
         AS u(table_id, schema_name, table_name)) AS t`,
    )
  }`,
};

/** The metadata row of the table named `$1`.`$2`, case-insensitively. */
const FOUND = `found AS (SELECT table_id, schema_name, table_name FROM ${META}.tables
       WHERE lower(schema_name) = lower($1) AND lower(table_name) = lower($2))`;

/**
 * The stamp of the description of the table in `found`: its metadata row's and those of the
 * tables its foreign keys name, each as its id and the transaction that last wrote it
 * (`xmin`). Every change of a definition through the service rewrites its table's row
 * (rewriteTable), a drop deletes it and a new table is a new id, so while the stamp is the
 * same the description is (docs/decisions.md, "Descriptions are remembered").
 */
const STAMP = `(SELECT string_agg(r.table_id || ':' || r.xmin::text, ' ' ORDER BY r.table_id)
     FROM ${META}.tables r WHERE r.table_id IN (SELECT table_id FROM found
       UNION SELECT k.ref_table_id FROM found JOIN ${META}.constraints k USING (table_id)))`;

const DESCRIBE_NAMED: Prepared = {
  name: "describe_named",
  text: `WITH ${FOUND}
     SELECT (SELECT coalesce(json_agg(found), '[]') FROM found) AS tables, ${STAMP} AS stamp, ${
    describing("found AS t")
  }`,
};

const STALE = "stale description";

/**
 * A statement that fails unless `row`, a query of one metadata row's `table_id:xmin`, gives
 * `stamped`. The failing branch names what it found, so that it is no constant the planner
 * would evaluate.
 */
function stampCheck(row: string, stamped: string): string {
  return `SELECT CASE WHEN s.stamp = ${stamped} THEN true
       ELSE ('${STALE}: ' || coalesce(s.stamp, 'no table'))::boolean END AS fresh
     FROM (SELECT (${row}) AS stamp) AS s`;
}

const ROW_STAMP = `SELECT table_id || ':' || xmin::text FROM ${META}.tables`;

const STILL_NAMED: Prepared = {
  name: "still_named",
  text: stampCheck(
    `${ROW_STAMP} WHERE lower(schema_name) = lower($1) AND lower(table_name) = lower($2)`,
    "$3",
  ),
};

const STILL_HELD: Prepared = {
  name: "still_held",
  text: stampCheck(`${ROW_STAMP} WHERE table_id = split_part($1, ':', 1)::integer`, "$1"),
};

const CAST_LITERAL = /^('(?:[^']|'')*')::(.+)$/s;

/**
 * A default as it was written: PostgreSQL keeps a string literal as a cast to its column's
 * type (`'x'::character varying`), which says nothing the column does not; any other
 * expression as PostgreSQL prints it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shownDefault } from "./metadata_describe.ts";
 *
 * assert.equal(shownDefault("'x'::character varying", "character varying(20)"), "'x'");
 * assert.equal(shownDefault("'1'::text::integer", "integer"), "'1'::text::integer");
 * ```
 */
export function shownDefault(expression: string | null, type: string): string | null {
  const cast = expression === null ? null : CAST_LITERAL.exec(expression);
  if (!cast) return expression;
  // The type with its modifier: varchar(20)'s default is cast to character varying.
  const unmodified = type.replace(/\([0-9, ]*\)/, "");
  return cast[2] === type || cast[2] === unmodified ? cast[1]! : expression;
}
