/**
 * Rows estimated from DuckDB's statistics: a table's `estimated_size` in `duckdb_tables()`
 * (rows appended, before deletes are cleaned up), and the planner's estimated cardinality of
 * a filtered SELECT, read from its `EXPLAIN`.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { RowEstimates } from "../shared/estimates.ts";
import type { Session } from "./database.ts";
import type { DuckDBValue } from "@duckdb/node-api";

/** DuckDB's estimates. */
export const DUCKDB_ESTIMATES: RowEstimates<Session> = {
  async tableRows(session, tables) {
    if (tables.length === 0) return [];
    const rows = await session.rows(
      `SELECT schema_name, table_name, estimated_size FROM duckdb_tables()
       WHERE database_name = current_database() AND NOT internal
         AND lower(schema_name) IN (SELECT lower(unnest($1::VARCHAR[])))`,
      [session.list([...new Set(tables.map((t) => t.schema))])],
    );
    const sizes = new Map(
      rows.map((r) => [
        key({ schema: r.schema_name as string, name: r.table_name as string }),
        Number(r.estimated_size),
      ]),
    );
    return tables.map((t) => sizes.get(key(t)) ?? 0);
  },
  async plannedRows(session, select, values) {
    const [row] = await session.rows(`EXPLAIN (FORMAT JSON) ${select}`, values as DuckDBValue[]);
    return rootCardinality(row?.explain_value);
  },
};

function key(ref: TableRef): string {
  return JSON.stringify([nameKey(ref.schema), nameKey(ref.name)]);
}

/** The root operator's "Estimated Cardinality" in DuckDB's JSON plan; 0 when it has none. */
function rootCardinality(plan: unknown): number {
  if (typeof plan !== "string") return 0;
  const parsed = JSON.parse(plan) as { extra_info?: Record<string, unknown> }[];
  const estimate = Number(parsed[0]?.extra_info?.["Estimated Cardinality"]);
  return Number.isFinite(estimate) ? estimate : 0;
}
