/**
 * The rebuild path of a table update: the table and its dependents recreated, rows copied across.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { Session } from "./database.ts";
import { createTableSql, freeSequenceName } from "./ddl.ts";
import { sequenceDefault } from "../shared/sql.ts";
import { META, type TableRow } from "./metadata.ts";
import { foreignKeyTargets } from "./metadata_constraints.ts";
import { describeTables } from "./metadata_describe.ts";
import { nextSequenceValue } from "./metadata_sequences.ts";
import { engineMessage, qualified, quoteIdent } from "./sql.ts";
import type { ColumnChange, UpdateAnalysis } from "./update_analysis.ts";
import { dropSequencesOf, recordUpdate } from "./update_record.ts";
import { retypeValue } from "./values.ts";

/**
 * Applies the update by rebuilding the table, and every table whose foreign keys lead to
 * it, in the caller's transaction.
 */
export async function rebuildTable(session: Session, analysis: UpdateAnalysis): Promise<void> {
  const { row, current, plan, columns, dependents } = analysis;
  const described = await setAside(session, dependents);

  // The old rows move aside: renamed (cheap), or copied when the table has foreign keys of
  // its own, because DuckDB does not carry a rename into the other table's record of them.
  const here = qualified(current.schema, current.name);
  let old = keepName(row.id);
  if (current.constraints.foreign_keys.length > 0) {
    await session.run(`CREATE TABLE ${old} AS SELECT * FROM ${here}`);
    await session.run(`DROP TABLE ${here}`);
  } else {
    old = qualified(current.schema, `\u0001rebuild_${row.id}`);
    await session.run(`ALTER TABLE ${here} RENAME TO ${quoteIdent(`\u0001rebuild_${row.id}`)}`);
  }

  const target = plan.ref;
  const newSequences = new Map<ColumnChange, string>();
  const defaults = new Map<ColumnChange, string | null>();
  for (const c of columns) {
    const owned = c.source && analysis.sequences.find((s) => s.columnId === c.source!.id);
    const drawsFromOwned = owned !== undefined && c.defaultSql === sequenceDefault(owned);
    if (c.planned.type.serial || (drawsFromOwned && analysis.moved)) {
      const name = await freeSequenceName(
        session,
        target.schema,
        `${target.name}_${c.planned.name}_seq`,
      );
      const start = owned ? await nextSequenceValue(session, owned.schema, owned.name) : 1n;
      await session.run(`CREATE SEQUENCE ${qualified(target.schema, name)} START WITH ${start}`);
      newSequences.set(c, name);
      defaults.set(c, sequenceDefault({ schema: target.schema, name }));
    } else defaults.set(c, c.defaultSql);
  }
  const shape = {
    columns: columns.map((c) => ({
      name: c.planned.name,
      typeSql: c.planned.type.sql,
      defaultSql: defaults.get(c),
      nullable: c.planned.nullable,
    })),
    primaryKey: plan.primaryKey?.columns,
    unique: plan.unique.map((k) => k.columns),
    foreignKeys: analysis.foreignKeys.map((fk) => ({
      column: fk.column,
      table: fk.table.id === undefined ? target : fk.table,
      refColumn: fk.refColumn,
    })),
  };
  await ddl(session, target.name, createTableSql(target, shape));

  const values = columns.map((c) => {
    if (c.source) {
      const source = `s.${quoteIdent(c.source.name)}`;
      return c.retyped ? retypeValue(source, c.source.type, c.type) : source;
    }
    const fill = defaults.get(c);
    return fill == null ? "NULL" : `CAST((${fill}) AS ${c.planned.type.sql})`;
  });
  const selfKeys = analysis.foreignKeys.filter((fk) => fk.table.id === undefined).map((fk) => ({
    value: values[columns.findIndex((c) => nameKey(c.planned.name) === nameKey(fk.column))]!,
    column: fk.refColumn,
  }));
  await copyRows(session, qualified(target.schema, target.name), old, values, selfKeys);
  await session.run(`DROP TABLE ${old}`);
  await dropSequencesOf(session, analysis, newSequences);
  await recordUpdate(session, analysis, newSequences);

  await restore(session, dependents, described);
}

/** Copies the dependents' rows aside and drops them, in drop order; gives their definitions. */
async function setAside(session: Session, dependents: readonly TableRow[]): Promise<Table[]> {
  const described = await describeTables(session, dependents);
  for (const dependent of dependents) {
    await session.run(
      `CREATE TABLE ${keepName(dependent.id)} AS SELECT * FROM ${
        qualified(dependent.schema, dependent.name)
      }`,
    );
  }
  for (const dependent of dependents) {
    await session.run(`DROP TABLE ${qualified(dependent.schema, dependent.name)}`);
  }
  return described;
}

/**
 * Recreates the dependents {@link setAside} dropped, with their rows, in reverse drop order
 * (a table after those it references); foreign keys aim at their targets' names of now.
 */
async function restore(
  session: Session,
  dependents: readonly TableRow[],
  described: readonly Table[],
): Promise<void> {
  for (const [index, dependent] of [...dependents.entries()].reverse()) {
    const table = described[index]!;
    const targets = new Map(
      (await foreignKeyTargets(session, dependent.id)).map((t) => [t.name, t]),
    );
    await ddl(
      session,
      dependent.name,
      createTableSql(dependent, {
        columns: table.columns.map((c) => ({
          name: c.name,
          typeSql: c.type,
          defaultSql: c.default,
          nullable: c.is_nullable,
        })),
        primaryKey: table.constraints.primary_key?.columns,
        unique: table.constraints.unique.map((k) => k.columns),
        foreignKeys: table.constraints.foreign_keys.map((fk) => {
          const now = targets.get(fk.name)!;
          return { column: fk.column, table: now.target, refColumn: now.refColumn };
        }),
      }),
    );
    const selfReferences = table.constraints.foreign_keys
      .filter((fk) => {
        const { target } = targets.get(fk.name)!;
        return target.name === dependent.name && target.schema === dependent.schema;
      })
      .map((fk) => ({ value: `s.${quoteIdent(fk.column)}`, column: fk.reference_column }));
    await copyRows(
      session,
      qualified(dependent.schema, dependent.name),
      keepName(dependent.id),
      table.columns.map((c) => `s.${quoteIdent(c.name)}`),
      selfReferences,
    );
    await session.run(`DROP TABLE ${keepName(dependent.id)}`);
  }
}

/**
 * Copies rows into a table. DuckDB checks a foreign key against the rows there before the
 * statement, so rows that reference rows of their own table go in level by level: first
 * those whose reference is null or already copied.
 */
async function copyRows(
  session: Session,
  into: string,
  from: string,
  values: readonly string[],
  selfKeys: readonly { readonly value: string; readonly column: string }[],
): Promise<void> {
  const list = values.length === 0 ? "NULL" : values.join(", ");
  if (selfKeys.length === 0) {
    await session.run(`INSERT INTO ${into} SELECT ${list} FROM ${from} s`);
    return;
  }
  const pending = quoteIdent("\u0001pending");
  const level = quoteIdent("\u0001level");
  await session.run(`CREATE TEMP TABLE ${pending} AS SELECT rowid AS rid FROM ${from}`);
  const ready = selfKeys.map((k) =>
    `(${k.value} IS NULL OR ${k.value} IN (SELECT ${quoteIdent(k.column)} FROM ${into}))`
  ).join(" AND ");
  try {
    for (;;) {
      await session.run(
        `CREATE OR REPLACE TEMP TABLE ${level} AS SELECT s.rowid AS rid FROM ${from} s
         WHERE s.rowid IN (SELECT rid FROM ${pending}) AND ${ready}`,
      );
      const [{ n }] = await session.rows(`SELECT count(*) AS n FROM ${level}`) as [{ n: bigint }];
      if (n === 0n) break;
      await session.run(
        `INSERT INTO ${into} SELECT ${list} FROM ${from} s
         WHERE s.rowid IN (SELECT rid FROM ${level}) ORDER BY s.rowid`,
      );
      await session.run(`DELETE FROM ${pending} WHERE rid IN (SELECT rid FROM ${level})`);
    }
    const [{ left }] = await session.rows(`SELECT count(*) AS left FROM ${pending}`) as [
      { left: bigint },
    ];
    if (left > 0n) {
      throw ApiError.conflict(
        `Cannot copy ${left} rows whose foreign keys reference each other in a cycle`,
      );
    }
  } finally {
    await session.run(`DROP TABLE IF EXISTS ${level}`).catch(() => {});
    await session.run(`DROP TABLE IF EXISTS ${pending}`).catch(() => {});
  }
}

function keepName(tableId: number): string {
  return qualified(META, `keep_${tableId}`);
}

async function ddl(session: Session, table: string, sql: string): Promise<void> {
  try {
    await session.run(sql);
  } catch (error) {
    throw ApiError.unprocessable(`Cannot update table "${table}": ${engineMessage(error)}`);
  }
}
