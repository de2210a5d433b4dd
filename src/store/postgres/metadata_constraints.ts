/**
 * Constraints in the metadata: recording them with their user-chosen names, and reading
 * foreign keys back by table id.
 *
 * @module
 */

import type { ConstraintRecord } from "../shared/constraint_records.ts";
import type { Session } from "./database.ts";
import { META } from "./metadata.ts";

export type { ConstraintKind, ConstraintRecord } from "../shared/constraint_records.ts";

/** Records a table's constraints, in the given order, in one statement. */
export async function recordConstraints(
  session: Session,
  tableId: number,
  constraints: readonly ConstraintRecord[],
): Promise<void> {
  if (constraints.length === 0) return;
  // Each constraint has its own number of columns, so they travel as one JSON array.
  const records = constraints.map((c, position) => ({
    position,
    kind: c.kind,
    name: c.name,
    column_ids: c.columnIds,
    ref_table_id: c.refTableId ?? null,
    ref_column_id: c.refColumnId ?? null,
  }));
  await session.run(
    `INSERT INTO ${META}.constraints
       (table_id, position, kind, constraint_name, column_ids, ref_table_id, ref_column_id)
     SELECT $1, r.position, r.kind, r.name,
       ARRAY(SELECT jsonb_array_elements_text(r.column_ids)::integer), r.ref_table_id,
       r.ref_column_id
     FROM jsonb_to_recordset($2::jsonb) AS r(position integer, kind text, name text,
       column_ids jsonb, ref_table_id integer, ref_column_id integer)`,
    [tableId, JSON.stringify(records)],
  );
}

export { referencingTables } from "../shared/metadata_tables.ts";

export { referencedTableIds } from "../shared/metadata_rows.ts";
