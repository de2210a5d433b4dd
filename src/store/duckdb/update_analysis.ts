/**
 * What a table update changes, worked out before anything is done, and which tables it touches.
 *
 * @module
 */

import { invalidDefinition, type TablePlan } from "../../catalog/definition.ts";
import type { Column, Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import { ApiError, type ErrorDetail, summarise } from "../../errors.ts";
import type { ColumnChange } from "../shared/column_change.ts";
import type { Session } from "./database.ts";
import { canonicalTypes, type ResolvedForeignKey, resolveForeignKeys } from "./ddl.ts";
import { checkDefault } from "./defaults.ts";
import { type TableRow, tablesById } from "./metadata.ts";
import {
  type ForeignKeyRow,
  foreignKeysInto,
  foreignKeysOf,
  referencedTableIds,
} from "./metadata_constraints.ts";
import { type SequenceRow, sequencesOf } from "./metadata_sequences.ts";
import { plannedConstraints, referenceProblems } from "../shared/update_constraints.ts";

export type { ColumnChange } from "../shared/column_change.ts";

/** Everything an update changes, worked out before anything is done. */
export interface UpdateAnalysis {
  readonly row: TableRow;
  readonly current: Table;
  readonly plan: TablePlan;
  readonly columns: readonly ColumnChange[];
  readonly dropped: readonly Column[];
  readonly foreignKeys: readonly ResolvedForeignKey[];
  readonly sequences: readonly SequenceRow[];
  readonly moved: boolean;
  readonly renamed: boolean;
  /** The keys or foreign keys differ in columns or targets, not only in name or order. */
  readonly keysChanged: boolean;
  /** Anything about the constraints differs, names and order included. */
  readonly constraintsChanged: boolean;
  readonly orderChanged: boolean;
  /** Other tables' foreign keys into this table. */
  readonly referenced: boolean;
  /** The tables whose foreign keys lead to this one, in drop order; a rebuild redoes them. */
  readonly dependents: readonly TableRow[];
}

/**
 * Works out what `update` changes against the table as it is: canonical types, rendered
 * defaults, which keys differ; 422 for an unknown type or a bad default or foreign key,
 * 409 when other tables' foreign keys would lose what they reference. Runs no DDL and
 * writes nothing; failed probes abort a transaction, so it runs outside the update's.
 */
export async function analyseUpdate(
  session: Session,
  row: TableRow,
  current: Table,
  update: TableUpdate,
  dependents: readonly TableRow[],
): Promise<UpdateAnalysis> {
  const { plan, sources } = update;
  const byId = new Map(current.columns.map((c) => [c.id, c]));
  const types = await canonicalTypes(session, plan);
  const sequences = await sequencesOf(session, row.id);
  const serialIds = new Set(sequences.map((s) => s.columnId));
  const primary = new Set((plan.primaryKey?.columns ?? []).map(nameKey));
  const problems: ErrorDetail[] = [];
  const columns: ColumnChange[] = [];
  for (const [index, planned] of plan.columns.entries()) {
    const source = byId.get(sources[index] ?? -1);
    const type = types[index]!;
    const retyped = source !== undefined && source.type !== type;
    let defaultSql = planned.default;
    const keepDefault = source !== undefined && planned.default === source.default &&
      (!retyped || serialIds.has(source.id));
    if (planned.default !== null && !keepDefault) {
      const checked = await checkDefault(session, planned.default, planned.type.sql);
      if (typeof checked === "string") defaultSql = checked;
      else {
        problems.push({
          column: planned.name,
          message: `Default of column "${planned.name}" ${checked.problem}`,
        });
      }
    }
    if (retyped && !(await castable(session, source.type, type))) {
      problems.push({
        column: planned.name,
        message: `Column "${planned.name}" cannot be converted from ${source.type} to ${type}`,
      });
    }
    const notNull = !planned.nullable || primary.has(nameKey(planned.name));
    columns.push({
      planned,
      source,
      type,
      defaultSql,
      notNull,
      renamed: source !== undefined && source.name !== planned.name,
      retyped,
      defaultChanged: source !== undefined && defaultSql !== source.default,
      notNullChanged: source !== undefined && notNull === source.is_nullable,
    });
  }
  const foreignKeys = await resolveForeignKeys(session, plan.ref, plan, problems);
  const typeOf = (name: string) =>
    columns.find((c) => nameKey(c.planned.name) === nameKey(name))?.type;
  for (const fk of foreignKeys) {
    const own = typeOf(fk.column);
    const referenced = fk.refType ?? typeOf(fk.refColumn);
    if (own !== referenced) {
      problems.push({
        column: fk.column,
        message: `Foreign key "${fk.name}" joins column "${fk.column}" of type ${own} to ` +
          `"${fk.table.name}.${fk.refColumn}" of type ${referenced}; the types must be equal`,
      });
    }
  }
  if (problems.length > 0) throw invalidDefinition(plan.ref.name, problems);

  const kept = new Set(columns.flatMap((c) => c.source ? [c.source.id] : []));
  const dropped = current.columns.filter((c) => !kept.has(c.id));
  const survivors = columns.flatMap((c) => c.source ? [c.source.id] : []);
  const stillInOrder = current.columns.filter((c) => kept.has(c.id))
    .every((c, i) => c.id === survivors[i]);
  const firstNew = columns.findIndex((c) => !c.source);
  const orderChanged = !stillInOrder ||
    (firstNew >= 0 && columns.slice(firstNew).some((c) => c.source));

  const idOfCurrent = (name: string) => current.columns.find((c) => c.name === name)?.id ?? -1;
  const currentKeys = keySignature({
    primary: current.constraints.primary_key?.columns.map(idOfCurrent),
    unique: current.constraints.unique.map((k) => k.columns.map(idOfCurrent)),
    foreign: (await foreignKeysOf(session, row.id)).map((fk) => [
      fk.columnId,
      fk.refTableId,
      fk.refColumnId,
    ]),
  });
  const idOfPlanned = (name: string) => {
    const change = columns.find((c) => nameKey(c.planned.name) === nameKey(name));
    return change?.source?.id ?? `new:${nameKey(name)}`;
  };
  const wantedKeys = keySignature({
    primary: plan.primaryKey?.columns.map(idOfPlanned),
    unique: plan.unique.map((k) => k.columns.map(idOfPlanned)),
    foreign: foreignKeys.map((fk) => [
      idOfPlanned(fk.column),
      fk.table.id ?? row.id,
      fk.table.id === undefined ? idOfPlanned(fk.refColumn) : fk.refColumnId!,
    ]),
  });
  const keysChanged = wantedKeys !== currentKeys;
  const constraintsChanged = keysChanged ||
    JSON.stringify(plannedConstraints(plan, foreignKeys)) !== JSON.stringify(current.constraints);

  const leadBack = new Set(dependents.map((d) => d.id));
  const cycle = foreignKeys.find((fk) => fk.table.id !== undefined && leadBack.has(fk.table.id));
  if (cycle) {
    throw ApiError.conflict(
      `Cannot update table "${current.name}": foreign key "${cycle.name}" to ` +
        `"${cycle.table.name}" would close a cycle of foreign keys, since "${cycle.table.name}" ` +
        `already leads back to "${current.name}"`,
    );
  }
  const into = await foreignKeysInto(session, row.id);
  const moved = plan.ref.schema !== current.schema;
  const blockers = await referencesLost(session, current, plan, columns, into, moved);
  if (blockers.length > 0) {
    throw ApiError.conflict(
      `Cannot update table "${current.name}": ${summarise(blockers)}`,
      blockers,
    );
  }
  return {
    row,
    current,
    plan,
    columns,
    dropped,
    foreignKeys,
    sequences,
    moved,
    renamed: plan.ref.name !== current.name,
    keysChanged,
    constraintsChanged,
    orderChanged,
    referenced: into.length > 0,
    dependents,
  };
}

/** Whether the update changes anything at all. */
export function changesAnything(analysis: UpdateAnalysis): boolean {
  return analysis.moved || analysis.renamed || analysis.constraintsChanged ||
    analysis.orderChanged || analysis.dropped.length > 0 ||
    analysis.columns.some((c) =>
      !c.source || c.renamed || c.retyped || c.defaultChanged || c.notNullChanged
    );
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

/** A column by its id, or a new column by a name. */
type ColumnKey = number | string;

/**
 * Keys and foreign keys as one comparable text of column ids: a key's columns as a set, a
 * foreign key as its column and its target's table and column. Names and order do not count.
 */
function keySignature(keys: {
  readonly primary?: readonly ColumnKey[];
  readonly unique: readonly (readonly ColumnKey[])[];
  readonly foreign: readonly (readonly [ColumnKey, number, ColumnKey])[];
}): string {
  const set = (ids: readonly ColumnKey[]) => ids.map(String).sort().join(",");
  return [
    ...(keys.primary ? [`P:${set(keys.primary)}`] : []),
    ...keys.unique.map((k) => `U:${set(k)}`),
    ...keys.foreign.map(([column, table, referenced]) => `F:${column}>${table}.${referenced}`),
  ].sort().join("|");
}

/** What other tables' foreign keys into this table would lose, their tables named. */
async function referencesLost(
  session: Session,
  current: Table,
  plan: TablePlan,
  columns: readonly ColumnChange[],
  into: readonly ForeignKeyRow[],
  moved: boolean,
): Promise<ErrorDetail[]> {
  if (into.length === 0) return [];
  const tables = await describeRows(session, [...new Set(into.map((fk) => fk.tableId))]);
  const named = into.map((fk) => {
    const from = tables.get(fk.tableId)!;
    return {
      constraint: fk.name,
      schema: from.schema,
      name: from.name,
      refColumnId: fk.refColumnId,
    };
  });
  return referenceProblems(current, plan, columns, named, moved);
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
