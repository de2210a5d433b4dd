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

import type { Table } from "../../catalog/model.ts";
import type { TableUpdate } from "../../catalog/update.ts";
import {
  type AnalysedUpdate,
  analyseUpdate as analyseWith,
  type UpdateDialect,
} from "../shared/update_analysis.ts";
import { probing, type Session } from "./database.ts";
import { TABLE_DIALECT } from "./ddl.ts";
import { checkDefault } from "./defaults.ts";
import type { TableRow } from "./metadata.ts";
import { META, sequencesOf } from "../shared/metadata_rows.ts";
import { referencingTables } from "../shared/metadata_tables.ts";
import { retypeSql } from "./retype.ts";

export type { ColumnChange } from "../shared/column_change.ts";

/** Everything an update changes, worked out before anything is done. */
export interface UpdateAnalysis extends AnalysedUpdate {
  /** The ids of the columns that draw from a sequence the metadata records. */
  readonly serialIds: ReadonlySet<number>;
}

/** PostgreSQL's part of the analysis: its types, defaults, casts and lookups. */
const DIALECT: UpdateDialect<Session> = {
  ...TABLE_DIALECT,
  types: (session, plan) =>
    Promise.all(plan.columns.map((column) => TABLE_DIALECT.columnType(session, column))),
  // A default sent back as read is PostgreSQL's own rendering (`'v'::character varying`),
  // of an expression once checked: on a retype only its cast to the new type is.
  checkDefault: (session, expression, _planned, type, asRead) =>
    asRead
      ? castDefault(probing(session), expression, type)
      : checkDefault(probing(session), expression, type),
  castable,
  leadingBack: tablesLeadingTo,
  referencesInto: (session, tableId) => referencingTables(session, [tableId]),
  foreignKeyTypesLast: true,
};

/**
 * Works out what `update` changes against the table as it is (shared/update_analysis.ts).
 * Runs no DDL and writes nothing.
 */
export async function analyseUpdate(
  session: Session,
  row: TableRow,
  current: Table,
  update: TableUpdate,
): Promise<UpdateAnalysis> {
  const serialIds = new Set((await sequencesOf(session, row.id)).map((s) => s.columnId));
  const analysed = await analyseWith(session, DIALECT, { row, current, update, serialIds });
  return { ...analysed, serialIds };
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
