/**
 * Table DDL: checking a plan's types and defaults with DuckDB, resolving its foreign keys,
 * and the one place a CREATE TABLE statement is written.
 *
 * @module
 */

import { sequenceDefault } from "../shared/sql.ts";
import { createTableSql as createShapeSql, type TableShapeSql } from "../shared/table_ddl.ts";
import { invalidDefinition, type PlannedColumn, type TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError, type ErrorDetail } from "../../errors.ts";
import type { Session } from "./database.ts";
import { checkDefault } from "./defaults.ts";
import { findTable, PLACEHOLDER_COLUMN, recordOrigin, recordTable } from "./metadata.ts";
import { recordConstraints } from "./metadata_constraints.ts";
import { constraintRecords } from "../shared/constraint_records.ts";
import {
  type ResolvedForeignKey,
  resolveForeignKeys as resolveKeys,
} from "../shared/foreign_keys.ts";
import { describeTables } from "./metadata_describe.ts";
import { recordSequence, sequenceExists } from "./metadata_sequences.ts";
import { engineMessage, qualified, quoteIdent } from "./sql.ts";

/**
 * Checks every column's type and default with DuckDB and gives the defaults as DuckDB
 * renders them, or throws 422 with every problem. Probes that fail abort a transaction in
 * DuckDB, so this runs on a session of its own, outside the one that builds the table.
 */
export async function checkColumns(
  session: Session,
  plan: TablePlan,
): Promise<Map<PlannedColumn, string>> {
  const problems: ErrorDetail[] = [];
  const defaults = new Map<PlannedColumn, string>();
  for (const column of plan.columns) {
    const typeProblem = await checkType(session, column.type.sql);
    if (typeProblem) {
      problems.push({
        column: column.name,
        message: `Column "${column.name}" has unknown type "${column.typeText}"`,
      });
      continue;
    }
    if (column.default === null) continue;
    const checked = await checkDefault(session, column.default, column.type.sql);
    if (typeof checked === "string") defaults.set(column, checked);
    else {problems.push({
        column: column.name,
        message: `Default of column "${column.name}" ${checked.problem}`,
      });}
  }
  if (problems.length > 0) throw invalidDefinition(plan.ref.name, problems);
  return defaults;
}

/** Creates the table, its sequences and its metadata; `defaults` come from {@link checkColumns}. */
export async function buildTable(
  session: Session,
  ref: TableRef,
  plan: TablePlan,
  checkedDefaults: ReadonlyMap<PlannedColumn, string>,
): Promise<Table> {
  const problems: ErrorDetail[] = [];
  const defaults = new Map(checkedDefaults);
  const references = await resolveForeignKeys(session, ref, plan, problems);
  if (problems.length > 0) throw invalidDefinition(ref.name, problems);

  const sequences = new Map<PlannedColumn, string>();
  for (const column of plan.columns) {
    if (!column.type.serial) continue;
    const sequence = await freeSequenceName(session, ref.schema, `${ref.name}_${column.name}_seq`);
    await session.run(`CREATE SEQUENCE ${qualified(ref.schema, sequence)}`);
    sequences.set(column, sequence);
    defaults.set(column, sequenceDefault({ schema: ref.schema, name: sequence }));
  }

  const sql = createTableSql(ref, {
    columns: plan.columns.map((column) => ({
      name: column.name,
      typeSql: column.type.sql,
      defaultSql: defaults.get(column),
      nullable: column.nullable,
    })),
    primaryKey: plan.primaryKey?.columns,
    unique: plan.unique.map((key) => key.columns),
    foreignKeys: references.map((fk) => ({
      column: fk.column,
      table: fk.table,
      refColumn: fk.refColumn,
    })),
  });
  try {
    await session.run(sql);
  } catch (error) {
    throw ApiError.unprocessable(`Cannot create table "${ref.name}": ${engineMessage(error)}`);
  }

  const columnNames = plan.columns.map((c) => c.name);
  const tableId = await recordTable(session, ref, columnNames);
  const idOf = (name: string) => columnNames.findIndex((n) => nameKey(n) === nameKey(name)) + 1;
  await recordConstraints(
    session,
    tableId,
    constraintRecords(plan, references, tableId, idOf),
  );
  for (const [column, sequence] of sequences) {
    await recordSequence(session, tableId, idOf(column.name), ref.schema, sequence);
  }
  if (plan.template) await recordOrigin(session, tableId, plan.template);
  return (await describeTables(session, [{ id: tableId, ...ref }]))[0]!;
}

export type { ResolvedForeignKey };

/** Finds each foreign key's target and checks it is a single-column key there. */
export function resolveForeignKeys(
  session: Session,
  ref: TableRef,
  plan: TablePlan,
  problems: ErrorDetail[],
): Promise<ResolvedForeignKey[]> {
  return resolveKeys(ref, plan, problems, async (reference) => {
    const row = await findTable(session, reference);
    return row && { row, table: (await describeTables(session, [row]))[0]! };
  });
}

/** Each planned column's canonical type: one query for all, one per column on a failure. */
export async function canonicalTypes(session: Session, plan: TablePlan): Promise<string[]> {
  if (plan.columns.length === 0) return [];
  const select = (columns: readonly PlannedColumn[]) =>
    `SELECT ${columns.map((c, i) => `typeof(CAST(NULL AS ${c.type.sql})) AS t${i}`).join(", ")}`;
  try {
    const [row] = await session.rows(select(plan.columns));
    return plan.columns.map((_, i) => row![`t${i}`] as string);
  } catch {
    const problems: ErrorDetail[] = [];
    for (const column of plan.columns) {
      if (await checkType(session, column.type.sql)) {
        problems.push({
          column: column.name,
          message: `Column "${column.name}" has unknown type "${column.typeText}"`,
        });
      }
    }
    throw invalidDefinition(plan.ref.name, problems);
  }
}

/** Undefined when DuckDB knows the type, else its complaint. */
async function checkType(session: Session, typeSql: string): Promise<string | undefined> {
  try {
    await session.rows(`SELECT CAST(NULL AS ${typeSql}) AS probe`);
    return undefined;
  } catch (error) {
    return engineMessage(error);
  }
}

export async function freeSequenceName(
  session: Session,
  schema: string,
  wanted: string,
): Promise<string> {
  const base = wanted.replaceAll(/[^A-Za-z0-9_]/g, "_").slice(0, 58);
  for (let n = 1;; n++) {
    const candidate = n === 1 ? base : `${base}_${n}`;
    if (!(await sequenceExists(session, schema, candidate))) return candidate;
  }
}

export type { TableShapeSql };

/**
 * The CREATE TABLE statement for a shape; a table without columns gets the hidden
 * placeholder column, because DuckDB needs at least one.
 */
export function createTableSql(ref: TableRef, shape: TableShapeSql): string {
  return createShapeSql(
    ref,
    shape,
    shape.columns.length === 0 ? `${quoteIdent(PLACEHOLDER_COLUMN)} BOOLEAN` : undefined,
  );
}
