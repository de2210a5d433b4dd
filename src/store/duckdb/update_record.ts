/**
 * Recording an applied table update in the metadata, and dropping the sequences it leaves unused.
 *
 * @module
 */

import type { Session } from "./database.ts";
import { recordUpdatedTable } from "../shared/metadata_tables.ts";
import { forgetSequences, recordSequences } from "../shared/metadata_rows.ts";
import { qualified } from "./sql.ts";
import type { ColumnChange, UpdateAnalysis } from "./update_analysis.ts";

/** Records the updated table in the metadata: address, column ids, constraints, sequences. */
export async function recordUpdate(
  session: Session,
  analysis: UpdateAnalysis,
  newSequences: ReadonlyMap<ColumnChange, string>,
): Promise<void> {
  const { row, plan, columns } = analysis;
  const ids = await recordUpdatedTable(session, analysis);
  const sequences = [...newSequences].map(([change, name]) => ({
    columnId: ids[columns.indexOf(change)]!,
    name,
  }));
  await forgetSequences(session, row.id, sequences.map((s) => s.columnId));
  await recordSequences(session, row.id, plan.ref.schema, sequences);
}

/** Drops the sequences of dropped columns, and those replaced by `replaced`'s new ones. */
export async function dropSequencesOf(
  session: Session,
  analysis: UpdateAnalysis,
  replaced: ReadonlyMap<ColumnChange, string> = new Map(),
): Promise<void> {
  const gone = new Set(analysis.dropped.map((c) => c.id));
  for (const change of replaced.keys()) if (change.source) gone.add(change.source.id);
  // A moved table leaves nothing behind: sequences its defaults no longer use go too.
  if (analysis.moved) { for (const s of analysis.sequences) gone.add(s.columnId); }
  const sequences = analysis.sequences.filter((s) => gone.has(s.columnId));
  for (const s of sequences) await session.run(`DROP SEQUENCE ${qualified(s.schema, s.name)}`);
  await forgetSequences(session, analysis.row.id, sequences.map((s) => s.columnId));
}
