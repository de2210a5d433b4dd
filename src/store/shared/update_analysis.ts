/**
 * What a table update changes, worked out alike on both engines before any DDL runs: each
 * wanted column next to the column it continues, foreign keys resolved and matched, columns
 * dropped or reordered, cycles and lost references refused, keys compared by column ids. The
 * engine gives its types, default check, cast probe and lookups ({@link UpdateDialect}).
 *
 * @module
 */

import { invalidDefinition, type PlannedColumn, type TablePlan } from "../../catalog/definition.ts";
import type { Column, Table } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import { ApiError, type ErrorDetail, summarise } from "../../errors.ts";
import type { ColumnChange } from "./column_change.ts";
import type { CoreMetadata, TableRow } from "./core.ts";
import { existingSchema } from "./schemas.ts";
import type { ResolvedForeignKey } from "./foreign_keys.ts";
import { resolvePlannedKeys, type TableDialect } from "./table_creation.ts";
import { plannedConstraints, type ReferenceInto, referenceProblems } from "./update_constraints.ts";

/** What one engine does for {@link analyseUpdate}, besides finding and describing tables. */
export interface UpdateDialect<S> extends Pick<TableDialect<S>, "findTable" | "describeTables"> {
  /** Each planned column's type as the engine names it, or its problem; or throws 422. */
  types(session: S, plan: TablePlan): Promise<readonly (string | ErrorDetail)[]>;
  /** A default checked for `planned`, of `type`; `asRead` when it is the column's own, sent back. */
  checkDefault(
    session: S,
    expression: string,
    planned: PlannedColumn,
    type: string,
    asRead: boolean,
  ): Promise<string | { problem: string }>;
  /** Whether values of one type convert to another at all (each value may still fail). */
  castable(session: S, from: string, to: string): Promise<boolean>;
  /** The ids of the other tables whose foreign keys lead to `tableId`, directly or not. */
  leadingBack(session: S, tableId: number): Promise<ReadonlySet<number>>;
  /** Other tables' foreign keys into `tableId`, in the order their problems are told. */
  referencesInto(session: S, tableId: number): Promise<readonly ReferenceInto[]>;
  /** Foreign keys joining two types are told only when nothing else is wrong (PostgreSQL). */
  readonly foreignKeyTypesLast?: boolean;
}

/** Everything an update changes, worked out before anything is done. */
export interface AnalysedUpdate {
  readonly row: TableRow;
  readonly current: Table;
  readonly plan: TablePlan;
  readonly columns: readonly ColumnChange[];
  readonly dropped: readonly Column[];
  readonly foreignKeys: readonly ResolvedForeignKey[];
  readonly moved: boolean;
  readonly renamed: boolean;
  /** Anything about the constraints differs, names and order included. */
  readonly constraintsChanged: boolean;
  readonly orderChanged: boolean;
  /** Other tables' foreign keys reference this table. */
  readonly referenced: boolean;
}

/**
 * Works out what `update` changes against `current`: 422 for an unknown type, a bad default,
 * a type no cast reaches or a bad foreign key; 409 for a cycle of foreign keys or a lost
 * reference. `serialIds`: the columns drawing from a recorded sequence. Writes nothing.
 */
export async function analyseUpdate<S>(
  session: S,
  dialect: UpdateDialect<S>,
  { row, current, update, serialIds }: {
    readonly row: TableRow;
    readonly current: Table;
    readonly update: TableUpdate;
    readonly serialIds: ReadonlySet<number>;
  },
): Promise<AnalysedUpdate> {
  const { plan, sources } = update;
  const byId = new Map(current.columns.map((c) => [c.id, c]));
  const problems: ErrorDetail[] = [];
  const types = await dialect.types(session, plan);
  const primary = new Set((plan.primaryKey?.columns ?? []).map(nameKey));
  const columns: ColumnChange[] = [];
  for (const [index, planned] of plan.columns.entries()) {
    const source = byId.get(sources[index] ?? -1);
    const type = types[index]!;
    if (typeof type !== "string") {
      problems.push(type);
      continue;
    }
    const retyped = source !== undefined && source.type !== type;
    let defaultSql = planned.default;
    const asRead = source !== undefined && planned.default === source.default;
    const keepDefault = asRead && (!retyped || serialIds.has(source.id));
    if (planned.default !== null && !keepDefault) {
      const checked = await dialect.checkDefault(session, planned.default, planned, type, asRead);
      if (typeof checked === "string") defaultSql = checked;
      else {
        problems.push({
          column: planned.name,
          message: `Default of column "${planned.name}" ${checked.problem}`,
        });
      }
    }
    if (retyped && !(await dialect.castable(session, source.type, type))) {
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
  const foreignKeys = await resolvePlannedKeys(session, dialect, plan.ref, plan, problems);
  const typeProblems = foreignKeyTypeProblems(columns, foreignKeys);
  const told = dialect.foreignKeyTypesLast && problems.length > 0
    ? problems
    : [...problems, ...typeProblems];
  if (told.length > 0) throw invalidDefinition(plan.ref.name, told);

  const kept = new Set(columns.flatMap((c) => c.source ? [c.source.id] : []));
  const survivors = columns.flatMap((c) => c.source ? [c.source.id] : []);
  const stillInOrder = current.columns.filter((c) => kept.has(c.id))
    .every((c, i) => c.id === survivors[i]);
  const firstNew = columns.findIndex((c) => !c.source);

  const leadBack = await dialect.leadingBack(session, row.id);
  const cycle = foreignKeys.find((fk) => fk.table.id !== undefined && leadBack.has(fk.table.id));
  if (cycle) {
    throw ApiError.conflict(
      `Cannot update table "${current.name}": foreign key "${cycle.name}" to ` +
        `"${cycle.table.name}" would close a cycle of foreign keys, since "${cycle.table.name}" ` +
        `already leads back to "${current.name}"`,
    );
  }
  const moved = plan.ref.schema !== current.schema;
  const into = await dialect.referencesInto(session, row.id);
  const blockers = referenceProblems(current, plan, columns, into, moved);
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
    dropped: current.columns.filter((c) => !kept.has(c.id)),
    foreignKeys,
    moved,
    renamed: plan.ref.name !== current.name,
    constraintsChanged: JSON.stringify(plannedConstraints(plan, foreignKeys)) !==
      JSON.stringify(current.constraints),
    orderChanged: !stillInOrder ||
      (firstNew >= 0 && columns.slice(firstNew).some((c) => c.source)),
    referenced: into.length > 0,
  };
}

/**
 * `update` aimed at its address as stored: a new schema in its stored spelling (404 when
 * there is none); 409 when another table holds the address.
 */
export async function settleAddress<S>(
  session: S,
  lookups: Pick<CoreMetadata<S>, "findSchema"> & Pick<TableDialect<S>, "findTable">,
  row: TableRow,
  current: Table,
  update: TableUpdate,
): Promise<TableUpdate> {
  const target = update.plan.ref;
  if (target.schema !== current.schema) {
    const schema = await existingSchema(lookups, session, target.schema);
    update = { ...update, plan: { ...update.plan, ref: { ...target, schema } } };
  }
  const other = await lookups.findTable(session, update.plan.ref);
  if (other && other.id !== row.id) {
    throw ApiError.conflict(`Table "${other.schema}.${other.name}" already exists`);
  }
  return update;
}

/** Whether the update changes anything at all. */
export function changesAnything(analysis: AnalysedUpdate): boolean {
  return analysis.moved || analysis.renamed || analysis.constraintsChanged ||
    analysis.orderChanged || analysis.dropped.length > 0 ||
    analysis.columns.some((c) =>
      !c.source || c.renamed || c.retyped || c.defaultChanged || c.notNullChanged
    );
}

/** The foreign keys that join columns of two types; both engines' equality needs one. */
function foreignKeyTypeProblems(
  columns: readonly ColumnChange[],
  foreignKeys: readonly ResolvedForeignKey[],
): ErrorDetail[] {
  const typeOf = (name: string) =>
    columns.find((c) => nameKey(c.planned.name) === nameKey(name))?.type;
  const problems: ErrorDetail[] = [];
  for (const fk of foreignKeys) {
    const own = typeOf(fk.column);
    // Another table's column was described when the foreign key was resolved.
    const referenced = fk.refType ?? typeOf(fk.refColumn);
    if (own !== referenced) {
      problems.push({
        column: fk.column,
        message: `Foreign key "${fk.name}" joins column "${fk.column}" of type ${own} to ` +
          `"${fk.table.name}.${fk.refColumn}" of type ${referenced}; the types must be equal`,
      });
    }
  }
  return problems;
}

/** A column by its id, or a new column by `new:` and its name's key. */
export type ColumnKey = number | string;

/**
 * A key's signature: its kind (`P` primary, `U` unique) and its columns as a set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keySignature } from "./update_analysis.ts";
 *
 * assert.equal(keySignature("U", [3, "new:b", 1]), "U:1,3,new:b");
 * ```
 */
export function keySignature(kind: "P" | "U", columns: readonly ColumnKey[]): string {
  return `${kind}:${columns.map(String).sort().join(",")}`;
}

/** A foreign key's signature: its column, and its target's table (or `self`) and column. */
export function foreignKeySignature(
  column: ColumnKey,
  table: number | "self",
  refColumn: ColumnKey,
): string {
  return `F:${column}>${table}.${refColumn}`;
}

/**
 * The signatures of the keys and foreign keys a plan wants, columns by `idOf`; a foreign key
 * to the table itself (or to table `selfId`) aims at `self`.
 */
export function plannedKeySignatures(
  plan: Pick<TablePlan, "primaryKey" | "unique">,
  foreignKeys: readonly ResolvedForeignKey[],
  idOf: (name: string) => ColumnKey,
  selfId?: number,
): string[] {
  return [
    ...(plan.primaryKey ? [keySignature("P", plan.primaryKey.columns.map(idOf))] : []),
    ...plan.unique.map((k) => keySignature("U", k.columns.map(idOf))),
    ...foreignKeys.map((fk) => plannedForeignKeySignature(fk, idOf, selfId)),
  ];
}

/** A planned foreign key's signature (see {@link plannedKeySignatures}). */
export function plannedForeignKeySignature(
  fk: ResolvedForeignKey,
  idOf: (name: string) => ColumnKey,
  selfId?: number,
): string {
  const target = fk.table.id === undefined || fk.table.id === selfId ? "self" : fk.table.id;
  const refColumn = fk.table.id === undefined ? idOf(fk.refColumn) : fk.refColumnId!;
  return foreignKeySignature(idOf(fk.column), target, refColumn);
}

/** A wanted column's key by name: the id of the column it continues, or `new:` and its name. */
export function plannedColumnKey(columns: readonly ColumnChange[]) {
  return (name: string): ColumnKey =>
    columns.find((c) => nameKey(c.planned.name) === nameKey(name))?.source?.id ??
      `new:${nameKey(name)}`;
}

/**
 * Whether the keys and foreign keys of the update differ from the table's in their columns
 * or targets, not only in names or order; `currentForeignKeys` as the metadata holds them.
 */
export function keysChanged(
  { row, current, plan, columns, foreignKeys }: AnalysedUpdate,
  currentForeignKeys: readonly { columnId: number; refTableId: number; refColumnId: number }[],
): boolean {
  const { primary_key, unique } = current.constraints;
  const idOfCurrent = (name: string) => current.columns.find((c) => c.name === name)?.id ?? -1;
  const have = [
    ...plannedKeySignatures({ primaryKey: primary_key, unique }, [], idOfCurrent),
    ...currentForeignKeys.map((fk) =>
      foreignKeySignature(
        fk.columnId,
        fk.refTableId === row.id ? "self" : fk.refTableId,
        fk.refColumnId,
      )
    ),
  ];
  const wanted = plannedKeySignatures(plan, foreignKeys, plannedColumnKey(columns), row.id);
  return have.sort().join("|") !== wanted.sort().join("|");
}
