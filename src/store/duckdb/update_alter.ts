/**
 * The ALTER path of a table update: whether DuckDB's ALTER TABLE can do it, and doing it.
 *
 * @module
 */

import { nameKey } from "../../catalog/names.ts";
import type { Session } from "./database.ts";
import { qualified, quoteIdent } from "./sql.ts";
import type { UpdateAnalysis } from "./update_analysis.ts";
import { dropSequencesOf, recordUpdate } from "./update_record.ts";
import { retypeValue } from "./values.ts";

/** Whether the ALTER path can be tried; DuckDB may still refuse, and then it rebuilds. */
export function canAlter(analysis: UpdateAnalysis): boolean {
  const { current, plan, columns } = analysis;
  if (
    analysis.moved || analysis.referenced || analysis.keysChanged || analysis.orderChanged ||
    current.columns.length === 0 || plan.columns.length === 0
  ) return false;
  const inKeys = new Set([
    ...(current.constraints.primary_key?.columns ?? []),
    ...current.constraints.unique.flatMap((k) => k.columns),
    ...current.constraints.foreign_keys.map((fk) => fk.column),
  ].map(nameKey));
  const keptNames = new Set(
    columns.flatMap((c) => c.source ? [nameKey(c.source.name)] : []),
  );
  // DuckDB does not carry a rename into the foreign key's record on the other table.
  if (analysis.renamed && current.constraints.foreign_keys.length > 0) return false;
  return columns.every((c) =>
    !c.planned.type.serial &&
    !(c.retyped && inKeys.has(nameKey(c.source!.name))) &&
    // A rename onto another kept column's current name (a swap) needs a rebuild.
    !(c.renamed && nameKey(c.planned.name) !== nameKey(c.source!.name) &&
      keptNames.has(nameKey(c.planned.name)))
  ) && analysis.dropped.every((c) => !inKeys.has(nameKey(c.name)));
}

/** Applies the update with ALTER TABLE statements, in the caller's transaction. */
export async function alterTable(session: Session, analysis: UpdateAnalysis): Promise<void> {
  const { current, columns } = analysis;
  const table = qualified(current.schema, current.name);
  const alter = (clause: string) => session.run(`ALTER TABLE ${table} ${clause}`);
  for (const column of analysis.dropped) await alter(`DROP COLUMN ${quoteIdent(column.name)}`);
  for (const c of columns.filter((c) => c.renamed)) {
    await alter(`RENAME COLUMN ${quoteIdent(c.source!.name)} TO ${quoteIdent(c.planned.name)}`);
  }
  for (const c of columns) {
    const name = quoteIdent(c.planned.name);
    if (!c.source) {
      await alter(
        `ADD COLUMN ${name} ${c.planned.type.sql}` +
          (c.defaultSql === null ? "" : ` DEFAULT (${c.defaultSql})`),
      );
      if (c.notNull) await alter(`ALTER COLUMN ${name} SET NOT NULL`);
      continue;
    }
    if (c.retyped) {
      await alter(
        `ALTER COLUMN ${name} TYPE ${c.planned.type.sql} USING ${
          retypeValue(name, c.source.type, c.type)
        }`,
      );
    }
    if (c.defaultChanged) {
      await alter(
        c.defaultSql === null
          ? `ALTER COLUMN ${name} DROP DEFAULT`
          : `ALTER COLUMN ${name} SET DEFAULT (${c.defaultSql})`,
      );
    }
    if (c.notNullChanged) {
      await alter(`ALTER COLUMN ${name} ${c.notNull ? "SET" : "DROP"} NOT NULL`);
    }
  }
  if (analysis.renamed) await alter(`RENAME TO ${quoteIdent(analysis.plan.ref.name)}`);
  await dropSequencesOf(session, analysis);
  await recordUpdate(session, analysis, new Map());
}
