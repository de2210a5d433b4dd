/**
 * Tables on either engine, where the engines decide alike: listing them.
 *
 * @module
 */

import type { ListTablesOptions, TableListing } from "../store.ts";
import type { Core, SqlSession } from "./core.ts";
import { existingSchema } from "./schemas.ts";

/** A page of tables in schema, then name, order, read in one snapshot with their count. */
export function listTables<S extends SqlSession>(
  core: Core<S>,
  options: ListTablesOptions,
): Promise<TableListing> {
  const { metadata } = core;
  return core.snapshot(async (session) => {
    const schema = options.schema === undefined
      ? undefined
      : await existingSchema(metadata, session, options.schema);
    const page = await metadata.pageOfTables(
      session,
      { schema, visibleSchemas: options.visibleSchemas },
      options.offset,
      options.limit,
    );
    const tables = options.verbose
      ? await metadata.describeTables(session, page.rows)
      : page.rows.map((r) => ({ name: r.name, schema: r.schema }));
    // Statistics, not counts: a listing of big tables answers at once (as Supabase's does).
    const estimates = await core.estimates.tableRows(session, page.rows);
    return {
      tables: tables.map((t, i) => ({ ...t, rows_estimate: estimates[i] ?? 0 })),
      total: page.total,
    };
  });
}
