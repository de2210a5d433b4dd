/**
 * Describes tables in response form from DuckDB's catalog and the metadata together.
 *
 * @module
 */

import { listValue } from "@duckdb/node-api";
import type { Table } from "../../catalog/model.ts";
import { assembleTables } from "../shared/table_descriptions.ts";
import type { Session } from "./database.ts";
import { plainBooleans } from "./defaults.ts";
import { META, type TableRow } from "./metadata.ts";
import { quoteIdent } from "./sql.ts";

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
  return assembleTables(
    tables,
    { columns: columnRows, constraints: constraintRows, origins: originRows },
    (r) => r.column_default === null ? null : plainBooleans(r.column_default as string),
  );
}
