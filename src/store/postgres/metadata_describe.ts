/**
 * Describes tables in response form from PostgreSQL's catalog and the metadata together:
 * names, types (`format_type()`, PostgreSQL's canonical names), defaults and nullability from
 * `pg_attribute`; ids, constraint names and template origins from the metadata.
 *
 * @module
 */

import type { Column, ForeignKey, KeyConstraint, Table } from "../../catalog/model.ts";
import type { Session } from "./database.ts";
import { META, type TableRow } from "./metadata.ts";
import { sequenceDefault } from "./sql.ts";

/**
 * Full response-form tables for the given metadata rows, in the same order: three queries
 * whatever the number of tables. Run it in the transaction that found the rows, so that a
 * concurrent drop cannot fall between.
 */
export async function describeTables(
  session: Session,
  tables: readonly TableRow[],
): Promise<Table[]> {
  if (tables.length === 0) return [];
  const ids = tables.map((t) => t.id);
  const columnRows = await session.rows(
    `SELECT m.table_id, m.column_id, a.attname AS column_name,
       format_type(a.atttypid, a.atttypmod) AS data_type,
       pg_get_expr(d.adbin, d.adrelid) AS column_default, NOT a.attnotnull AS is_nullable,
       s.schema_name AS sequence_schema, s.sequence_name
     FROM unnest($1::integer[], $2::text[], $3::text[]) AS t(table_id, schema_name, table_name)
     JOIN pg_namespace n ON n.nspname = t.schema_name
     JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = t.table_name
     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     JOIN ${META}.columns m ON m.table_id = t.table_id AND m.column_name = a.attname
     LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
     LEFT JOIN ${META}.sequences s ON s.table_id = m.table_id AND s.column_id = m.column_id
     ORDER BY t.table_id, a.attnum`,
    [ids, tables.map((t) => t.schema), tables.map((t) => t.name)],
  );
  const constraintRows = await session.rows(
    `SELECT k.table_id, k.kind, k.constraint_name, k.column_ids,
       r.schema_name AS ref_schema, r.table_name AS ref_table, rc.column_name AS ref_column
     FROM ${META}.constraints k
     LEFT JOIN ${META}.tables r ON r.table_id = k.ref_table_id
     LEFT JOIN ${META}.columns rc ON rc.table_id = k.ref_table_id AND rc.column_id = k.ref_column_id
     WHERE k.table_id = ANY($1::integer[])
     ORDER BY k.table_id, k.position`,
    [ids],
  );
  const originRows = await session.rows(
    `SELECT table_id, template_name, template_version FROM ${META}.table_origins
     WHERE table_id = ANY($1::integer[])`,
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
      // A serial column's default is shown as the service writes it on every engine.
      default: r.sequence_name !== null
        ? sequenceDefault({ schema: r.sequence_schema as string, name: r.sequence_name as string })
        : shownDefault(r.column_default as string | null, r.data_type as string),
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
    return {
      name: t.name,
      schema: t.schema,
      columns: columns.get(t.id) ?? [],
      constraints: {
        primary_key: c?.pk ?? null,
        unique: c?.unique ?? [],
        foreign_keys: c?.fks ?? [],
      },
      ...(origins.has(t.id) ? { template: origins.get(t.id) } : {}),
    };
  });
}

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
