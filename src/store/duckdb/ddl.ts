/**
 * Table DDL: checking a plan's types and defaults with DuckDB, resolving its foreign keys,
 * and the one place a CREATE TABLE statement is written.
 *
 * @module
 */

import { sequenceDefault } from "../shared/sql.ts";
import { createTableSql as createShapeSql, type TableShapeSql } from "../shared/table_ddl.ts";
import {
  buildTable as buildWith,
  checkColumns as checkWith,
  type TableDialect,
} from "../shared/table_creation.ts";
import { invalidDefinition, type PlannedColumn, type TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import type { ErrorDetail } from "../../errors.ts";
import type { Session } from "./database.ts";
import { checkDefault } from "./defaults.ts";
import { findTable, META, PLACEHOLDER_COLUMN } from "./metadata.ts";
import { recordTable } from "../shared/metadata_tables.ts";
import { describeTables } from "./metadata_describe.ts";
import { sequenceExists } from "./metadata_sequences.ts";
import { engineMessage, qualified, quoteIdent } from "./sql.ts";

/** DuckDB's part of creating a table (shared/table_creation.ts). */
export const TABLE_DIALECT: TableDialect<Session> = {
  async columnType(session, column) {
    try {
      await session.rows(`SELECT CAST(NULL AS ${column.type.sql}) AS probe`);
      return column.type.sql;
    } catch {
      const message = `Column "${column.name}" has unknown type "${column.typeText}"`;
      return { column: column.name, message };
    }
  },
  checkDefault,
  findTable,
  describeTables,
  createTableSql,
  async createSequence(session, ref, column) {
    const name = await freeSequenceName(session, ref.schema, `${ref.name}_${column}_seq`);
    await session.run(`CREATE SEQUENCE ${qualified(ref.schema, name)}`);
    return { name, defaultSql: sequenceDefault({ schema: ref.schema, name }) };
  },
  message: engineMessage,
  recordTable: (session, ref, columnNames) =>
    recordTable(session, ref, columnNames, `nextval('${META}.table_ids')::INTEGER`),
};

/**
 * Checks every column's type and default with DuckDB and gives the defaults as DuckDB
 * renders them, or throws 422 with every problem. Probes that fail abort a transaction in
 * DuckDB, so this runs on a session of its own, outside the one that builds the table.
 */
export async function checkColumns(
  session: Session,
  plan: TablePlan,
): Promise<Map<PlannedColumn, string>> {
  return new Map((await checkWith(session, TABLE_DIALECT, plan)).defaults);
}

/** Creates the table, its sequences and its metadata; `defaults` come from {@link checkColumns}. */
export function buildTable(
  session: Session,
  ref: TableRef,
  plan: TablePlan,
  checkedDefaults: ReadonlyMap<PlannedColumn, string>,
): Promise<Table> {
  const types = plan.columns.map((c) => c.type.sql);
  return buildWith(session, TABLE_DIALECT, ref, plan, { types, defaults: checkedDefaults });
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
      const type = await TABLE_DIALECT.columnType(session, column);
      if (typeof type !== "string") problems.push(type);
    }
    throw invalidDefinition(plan.ref.name, problems);
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
