/**
 * The metadata both engines keep in the same tables and read and write with the same SQL:
 * the internal schema's name, a table's template origin, and the tables its foreign keys
 * reference. Each engine's session runs the statements.
 *
 * @module
 */

import type { SqlSession } from "./core.ts";
import type { TemplateRef } from "../../catalog/model.ts";

/** The internal schema; never listed, never addressable through the API. */
export const META = "_table_service";

/** Records which template version a table was made from. */
export async function recordOrigin(
  session: SqlSession,
  tableId: number,
  template: TemplateRef,
): Promise<void> {
  await session.run(`INSERT INTO ${META}.table_origins VALUES ($1, $2, $3)`, [
    tableId,
    template.name,
    template.version,
  ]);
}

/** The ids of the tables a table's foreign keys reference, itself left out. */
export async function referencedTableIds(
  session: SqlSession,
  tableId: number,
): Promise<number[]> {
  const rows = await session.rows(
    `SELECT DISTINCT ref_table_id FROM ${META}.constraints
     WHERE table_id = $1 AND kind = 'FOREIGN KEY' AND ref_table_id <> $1`,
    [tableId],
  );
  return rows.map((r) => r.ref_table_id as number);
}
