/**
 * What a table update changes, worked out before anything is done, and which tables it touches.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import { ApiError } from "../../errors.ts";
import {
  type AnalysedUpdate,
  analyseUpdate as analyseWith,
  keysChanged,
  type UpdateDialect,
} from "../shared/update_analysis.ts";
import type { Session } from "./database.ts";
import { canonicalTypes, TABLE_DIALECT } from "./ddl.ts";
import { checkDefault } from "./defaults.ts";
import { type TableRow, tablesById } from "./metadata.ts";
import { foreignKeysInto, foreignKeysOf, referencedTableIds } from "./metadata_constraints.ts";
import { type SequenceRow, sequencesOf } from "../shared/metadata_rows.ts";

export type { ColumnChange } from "../shared/column_change.ts";

/** Everything an update changes, worked out before anything is done. */
export interface UpdateAnalysis extends AnalysedUpdate {
  readonly sequences: readonly SequenceRow[];
  /** The keys or foreign keys differ in columns or targets, not only in name or order. */
  readonly keysChanged: boolean;
  /** The tables whose foreign keys lead to this one, in drop order; a rebuild redoes them. */
  readonly dependents: readonly TableRow[];
}

/** DuckDB's part of the analysis: its canonical types, defaults, casts and lookups. */
const DIALECT: Omit<UpdateDialect<Session>, "leadingBack"> = {
  ...TABLE_DIALECT,
  types: (session, plan) => canonicalTypes(session, plan),
  checkDefault: (session, expression, planned) =>
    checkDefault(session, expression, planned.type.sql),
  castable,
  async referencesInto(session, tableId) {
    const into = await foreignKeysInto(session, tableId);
    if (into.length === 0) return [];
    const tables = await describeRows(session, [...new Set(into.map((fk) => fk.tableId))]);
    return into.map((fk) => {
      const from = tables.get(fk.tableId)!;
      return {
        constraint: fk.name,
        schema: from.schema,
        name: from.name,
        refColumnId: fk.refColumnId,
      };
    });
  },
};

/**
 * Works out what `update` changes against the table as it is (shared/update_analysis.ts),
 * and whether its keys change; `dependents` are the tables whose foreign keys lead to it.
 * Runs no DDL and writes nothing; failed probes abort a transaction, so it runs outside
 * the update's.
 */
export async function analyseUpdate(
  session: Session,
  row: TableRow,
  current: Table,
  update: TableUpdate,
  dependents: readonly TableRow[],
): Promise<UpdateAnalysis> {
  const sequences = await sequencesOf(session, row.id);
  const leadBack = new Set(dependents.map((d) => d.id));
  const analysed = await analyseWith(
    session,
    { ...DIALECT, leadingBack: () => Promise.resolve(leadBack) },
    { row, current, update, serialIds: new Set(sequences.map((s) => s.columnId)) },
  );
  const changed = keysChanged(analysed, await foreignKeysOf(session, row.id));
  return {
    ...analysed,
    constraintsChanged: changed || analysed.constraintsChanged,
    keysChanged: changed,
    sequences,
    dependents,
  };
}

/**
 * The tables whose foreign keys lead to `tableId`, directly or through each other, in an
 * order in which each can be dropped: a table before any table it references.
 */
export async function dependentsInDropOrder(
  session: Session,
  tableId: number,
): Promise<TableRow[]> {
  const edges = new Map<number, Set<number>>(); // table → tables of the closure it references
  const queue = [tableId];
  while (queue.length > 0) {
    const id = queue.shift()!;
    for (const fk of await foreignKeysInto(session, id)) {
      if (fk.tableId === tableId) continue;
      if (!edges.has(fk.tableId)) {
        edges.set(fk.tableId, new Set());
        queue.push(fk.tableId);
      }
      if (id !== tableId) edges.get(fk.tableId)!.add(id);
    }
  }
  const order: number[] = [];
  const remaining = new Set(edges.keys());
  while (remaining.size > 0) {
    // Droppable: no remaining table references it.
    const next = [...remaining].find((id) =>
      ![...remaining].some((other) => other !== id && edges.get(other)!.has(id))
    );
    if (next === undefined) {
      throw ApiError.conflict("Tables that reference this one reference each other in a cycle");
    }
    order.push(next);
    remaining.delete(next);
  }
  const rows = await describeRows(session, order);
  return order.map((id) => rows.get(id)!);
}

async function describeRows(
  session: Session,
  ids: readonly number[],
): Promise<Map<number, TableRow>> {
  return new Map((await tablesById(session, ids)).map((row) => [row.id, row]));
}

/** Whether DuckDB has a cast between two types at all (values may still fail it). */
async function castable(session: Session, from: string, to: string): Promise<boolean> {
  try {
    await session.rows(`SELECT try(CAST(CAST(NULL AS ${from}) AS ${to})) AS probe`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Every table whose catalog entry the update may change, and so must lock: the table, its
 * new address, the tables whose foreign keys lead to it, and every table those and it
 * reference, before and after. DuckDB records a foreign key on both tables it joins.
 */
export async function tablesTouched(
  session: Session,
  row: TableRow,
  dependents: readonly TableRow[],
  update: TableUpdate,
): Promise<TableRef[]> {
  const ids = new Set([row.id, ...dependents.map((d) => d.id)]);
  for (const id of [...ids]) {
    for (const referenced of await referencedTableIds(session, id)) ids.add(referenced);
  }
  const rows = await describeRows(session, [...ids]);
  return [
    ...rows.values(),
    update.plan.ref,
    ...update.plan.foreignKeys.map((fk) => fk.reference),
  ];
}
