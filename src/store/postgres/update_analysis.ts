/**
 * What a table update changes on PostgreSQL, worked out under the update's locks before any
 * DDL runs: each wanted column next to the column it continues, PostgreSQL's type and
 * rendered default of each, and what other tables' foreign keys would lose.
 *
 * Probes that may fail (a default, a cast between two types) run each in a savepoint
 * (`probing`), so the update's one transaction survives them.
 *
 * @module
 */

import { invalidDefinition, type TablePlan } from "../../catalog/definition.ts";
import type { Column, Table } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import { ApiError, type ErrorDetail, summarise } from "../../errors.ts";
import type { ColumnChange } from "../shared/column_change.ts";
import { probing, type Session } from "./database.ts";
import { type ResolvedForeignKey, resolveForeignKeys } from "./ddl.ts";
import { checkDefault } from "./defaults.ts";
import { META, type TableRow } from "./metadata.ts";
import { referencingTables } from "./metadata_constraints.ts";
import { retypeSql } from "./retype.ts";
import { plannedConstraints, referenceProblems } from "../shared/update_constraints.ts";
import { postgresType } from "./types.ts";

export type { ColumnChange } from "../shared/column_change.ts";

/** Everything an update changes, worked out before anything is done. */
export interface UpdateAnalysis {
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
  /** The ids of the columns that draw from a sequence the metadata records. */
  readonly serialIds: ReadonlySet<number>;
}

/**
 * Works out what `update` changes against the table as it is: types, rendered defaults,
 * foreign keys resolved; 422 for an unknown type, a bad default, a type no cast reaches or
 * a bad foreign key; 409 when other tables' foreign keys would lose what they reference,
 * or a new foreign key would close a cycle. Runs no DDL and writes nothing.
 */
export async function analyseUpdate(
  session: Session,
  row: TableRow,
  current: Table,
  update: TableUpdate,
): Promise<UpdateAnalysis> {
  const { plan, sources } = update;
  const byId = new Map(current.columns.map((c) => [c.id, c]));
  const serialIds = new Set(
    (await session.rows(`SELECT column_id FROM ${META}.sequences WHERE table_id = $1`, [row.id]))
      .map((r) => r.column_id as number),
  );
  const primary = new Set((plan.primaryKey?.columns ?? []).map(nameKey));
  const problems: ErrorDetail[] = [];
  const columns: ColumnChange[] = [];
  for (const [index, planned] of plan.columns.entries()) {
    const source = byId.get(sources[index] ?? -1);
    const mapped = postgresType(planned.type);
    if (typeof mapped !== "string") {
      problems.push({
        column: planned.name,
        message: `Column "${planned.name}": ${mapped.problem}`,
      });
      continue;
    }
    const type = mapped;
    const retyped = source !== undefined && source.type !== type;
    let defaultSql = planned.default;
    const keepDefault = source !== undefined && planned.default === source.default &&
      (!retyped || serialIds.has(source.id));
    // A default sent back as read is PostgreSQL's own rendering (`'v'::character varying`),
    // of an expression once checked: on a retype only its cast to the new type is.
    const asRead = source !== undefined && planned.default === source.default;
    if (planned.default !== null && !keepDefault) {
      const checked = asRead
        ? await castDefault(probing(session), planned.default!, type)
        : await checkDefault(probing(session), planned.default!, type);
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
  if (problems.length > 0) throw invalidDefinition(plan.ref.name, problems);
  checkForeignKeyTypes(plan, columns, foreignKeys);

  const kept = new Set(columns.flatMap((c) => c.source ? [c.source.id] : []));
  const dropped = current.columns.filter((c) => !kept.has(c.id));
  const survivors = columns.flatMap((c) => c.source ? [c.source.id] : []);
  const stillInOrder = current.columns.filter((c) => kept.has(c.id))
    .every((c, i) => c.id === survivors[i]);
  const firstNew = columns.findIndex((c) => !c.source);
  const orderChanged = !stillInOrder ||
    (firstNew >= 0 && columns.slice(firstNew).some((c) => c.source));
  const constraintsChanged = JSON.stringify(plannedConstraints(plan, foreignKeys)) !==
    JSON.stringify(current.constraints);

  const leadBack = await tablesLeadingTo(session, row.id);
  const cycle = foreignKeys.find((fk) => fk.table.id !== undefined && leadBack.has(fk.table.id));
  if (cycle) {
    throw ApiError.conflict(
      `Cannot update table "${current.name}": foreign key "${cycle.name}" to ` +
        `"${cycle.table.name}" would close a cycle of foreign keys, since "${cycle.table.name}" ` +
        `already leads back to "${current.name}"`,
    );
  }
  const moved = plan.ref.schema !== current.schema;
  const into = await referencingTables(session, [row.id]);
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
    dropped,
    foreignKeys,
    moved,
    renamed: plan.ref.name !== current.name,
    constraintsChanged,
    orderChanged,
    serialIds,
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

/** A default from the catalog cast to `type`: the expression, or the problem. */
async function castDefault(
  session: Session,
  expression: string,
  type: string,
): Promise<string | { problem: string }> {
  try {
    await session.rows(`SELECT CAST((${expression}) AS ${type}) AS probe`);
    return expression;
  } catch (error) {
    return { problem: `is not a value of type ${type}: ${(error as Error).message}` };
  }
}

/** Whether values of one type convert to another at all (each value may still fail). */
async function castable(session: Session, from: string, to: string): Promise<boolean> {
  try {
    await probing(session).rows(`SELECT ${retypeSql(`CAST(NULL AS ${from})`, from, to)} AS p`);
    return true;
  } catch {
    return false;
  }
}

/** 422 unless each foreign key joins columns of one type, as PostgreSQL's equality needs. */
function checkForeignKeyTypes(
  plan: TablePlan,
  columns: readonly ColumnChange[],
  foreignKeys: readonly ResolvedForeignKey[],
): void {
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
  if (problems.length > 0) throw invalidDefinition(plan.ref.name, problems);
}

/** The ids of the other tables whose foreign keys lead to `tableId`, directly or not. */
async function tablesLeadingTo(session: Session, tableId: number): Promise<Set<number>> {
  const rows = await session.rows(
    `WITH RECURSIVE chain(table_id) AS (
       SELECT table_id FROM ${META}.constraints
       WHERE kind = 'FOREIGN KEY' AND ref_table_id = $1 AND table_id <> $1
       UNION
       SELECT k.table_id FROM ${META}.constraints k JOIN chain l ON k.ref_table_id = l.table_id
       WHERE k.kind = 'FOREIGN KEY')
     SELECT table_id FROM chain WHERE table_id <> $1`,
    [tableId],
  );
  return new Set(rows.map((r) => r.table_id as number));
}
