/**
 * Finding a schema or table that must exist, and dropping a table with what it owns.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { checkTableDrop } from "../shared/drop_checks.ts";
import { existingSchema as existingSchemaIn } from "../shared/schemas.ts";
import type { Session } from "./database.ts";
import { findSchema, findTable, type TableRow } from "./metadata.ts";
import { forgetTables, referencingTables } from "../shared/metadata_tables.ts";
import { sequencesOf } from "../shared/metadata_rows.ts";
import { qualified } from "./sql.ts";

/** The stored spelling of an existing schema's name; 404 when there is none. */
export function existingSchema(session: Session, name: string): Promise<string> {
  return existingSchemaIn({ findSchema }, session, name);
}

/** The metadata row of table `ref`; 404 naming the schema or the table that is missing. */
export async function existingTable(session: Session, ref: TableRef): Promise<TableRow> {
  const row = await findTable(session, ref);
  if (row) return row;
  // Say which of the two is missing.
  const schema = await existingSchema(session, ref.schema);
  throw ApiError.notFound(`Table "${schema}.${ref.name}" does not exist`);
}

/** Drops a table with its sequences and metadata; 409 when another table references it. */
export async function dropTableIn(session: Session, row: TableRow): Promise<void> {
  checkTableDrop(row, await referencingTables(session, [row.id]));
  const sequences = await sequencesOf(session, row.id);
  await forgetTables(session, [row.id]);
  await session.run(`DROP TABLE ${qualified(row.schema, row.name)}`);
  for (const s of sequences) await session.run(`DROP SEQUENCE ${qualified(s.schema, s.name)}`);
}

/** Whether `a` and `b` hold the same ids, in any order. */
export function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && [...a].sort().join() === [...b].sort().join();
}
