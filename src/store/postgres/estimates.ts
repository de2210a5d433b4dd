/**
 * Rows estimated from PostgreSQL's statistics. A table's estimate is the planner's own:
 * `reltuples` per page of `pg_class` scaled to the pages the table has now (so a table grown
 * since its last ANALYZE is not underestimated); a table never analysed or vacuumed
 * (`reltuples` −1, or no pages when last analysed) takes the live rows the statistics
 * collector counted (`pg_stat_get_live_tuples`), which each committed insert and delete moves.
 * A filtered read's estimate is the planner's rows of its plan (`EXPLAIN`).
 *
 * @module
 */

import type { RowEstimates } from "../shared/estimates.ts";
import { qualified } from "../shared/sql.ts";
import type { Param, Session } from "./database.ts";

/** PostgreSQL's estimates. */
export const POSTGRES_ESTIMATES: RowEstimates<Session> = {
  async tableRows(session, tables) {
    if (tables.length === 0) return [];
    const rows = await session.rows(
      `SELECT t.n, CASE
           WHEN c.reltuples >= 0 AND c.relpages > 0 THEN
             round(c.reltuples / c.relpages
               * (pg_relation_size(c.oid) / current_setting('block_size')::float8))
           ELSE pg_stat_get_live_tuples(c.oid)
         END AS estimate
       FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n)
       LEFT JOIN pg_class c ON c.oid = to_regclass(t.name)
       ORDER BY t.n`,
      [session.list(tables.map((t) => qualified(t.schema, t.name)))],
    );
    return rows.map((r) => Math.max(0, Number(r.estimate ?? 0)));
  },
  async plannedRows(session, select, values) {
    const [row] = await session.rows(`EXPLAIN (FORMAT JSON) ${select}`, values as Param[]);
    const plan = row?.["QUERY PLAN"];
    const parsed = (typeof plan === "string" ? JSON.parse(plan) : plan) as
      | { Plan?: { "Plan Rows"?: number } }[]
      | undefined;
    const estimate = Number(parsed?.[0]?.Plan?.["Plan Rows"]);
    return Number.isFinite(estimate) ? estimate : 0;
  },
};
