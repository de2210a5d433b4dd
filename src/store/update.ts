/**
 * Updating a table to a wanted definition in DuckDB: what really changes, whether the rows
 * allow it, and doing it, with ALTER TABLE where DuckDB can and by a rebuild where it
 * cannot, always inside the caller's one transaction.
 *
 * DuckDB's ALTER TABLE cannot move a table to another schema, reorder columns, add or drop
 * a key, retype or drop a key column, or touch a table another table references. A rebuild
 * does all of these: keep copies of the tables that reference this one, drop them, create
 * the table's new shape, copy the rows across with the column mapping, and recreate the
 * referencing tables from their copies. Column ids live in the metadata, so they survive.
 *
 * @module
 */

import {
  invalidDefinition,
  type PlannedColumn,
  type PlannedKey,
  type TablePlan,
} from "../catalog/definition.ts";
import type { Column, Table, TableRef } from "../catalog/model.ts";
import { nameKey } from "../catalog/names.ts";
import type { TableUpdate } from "../catalog/update.ts";
import { ApiError, type ErrorDetail, MAX_DETAILS, summarise } from "../errors.ts";
import type { Database, Session } from "./database.ts";
import type { KeyedWrite, UpdateHow } from "./store.ts";
import { keepAnswer } from "./idempotency.ts";
import {
  canonicalTypes,
  createTableSql,
  freeSequenceName,
  type ResolvedForeignKey,
  resolveForeignKeys,
  sequenceDefault,
} from "./ddl.ts";
import { checkDefault } from "./defaults.ts";
import {
  describeTables,
  type ForeignKeyRow,
  foreignKeysInto,
  foreignKeysOf,
  foreignKeyTargets,
  forgetSequences,
  META,
  nextColumnId,
  nextSequenceValue,
  recordConstraints,
  recordSequence,
  referencedTableIds,
  rewriteTable,
  type SequenceRow,
  sequencesOf,
  type TableRow,
  tablesById,
} from "./metadata.ts";
import { recordOrder } from "./record_reads.ts";
import { engineMessage, qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import { retypeValue } from "./values.ts";

/** A wanted column next to the column it continues. */
interface ColumnChange {
  readonly planned: PlannedColumn;
  /** The existing column, or undefined for a new one. */
  readonly source?: Column;
  /** The canonical type, as DuckDB names it. */
  readonly type: string;
  /** The default as DuckDB renders it; a new serial column's is made when it is built. */
  readonly defaultSql: string | null;
  /** NOT NULL, or part of the primary key (which implies it). */
  readonly notNull: boolean;
  readonly renamed: boolean;
  readonly retyped: boolean;
  readonly defaultChanged: boolean;
  readonly notNullChanged: boolean;
}

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
  const blockers = await referenceProblems(session, current, plan, columns, into, moved);
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
 * Checks that the rows allow the update: values cast to new types, no nulls where NOT NULL
 * is wanted, no duplicates for a new key (409), no orphans for a new foreign key. Reads
 * only; details name the first failing rows by their position in record order.
 */
export async function checkRows(session: Session, analysis: UpdateAnalysis): Promise<void> {
  const { current, plan, columns } = analysis;
  const table = qualified(current.schema, current.name);
  const order = recordOrder(current);
  // Every check reads the rows numbered once, in record order.
  const numbered = `SELECT row_number() OVER (ORDER BY ${order}) - 1 AS row_, * FROM ${table}`;
  const valueOf = (change: ColumnChange) =>
    change.retyped
      ? `try(${retypeValue(quoteIdent(change.source!.name), change.source!.type, change.type)})`
      : quoteIdent(change.source!.name);
  const byName = new Map(columns.map((c) => [nameKey(c.planned.name), c]));

  const invalid: string[] = [];
  for (const change of columns) {
    const name = quoteLiteral(change.planned.name);
    if (change.source && change.retyped) {
      const source = quoteIdent(change.source.name);
      invalid.push(
        `SELECT row_, ${name} AS col, left(${source}::VARCHAR, 80) AS value,
           'cannot be cast to ${change.type.replaceAll("'", "")}' AS why
         FROM numbered WHERE ${source} IS NOT NULL AND ${valueOf(change)} IS NULL`,
      );
    }
    if (change.source && change.notNull && change.source.is_nullable) {
      invalid.push(
        `SELECT row_, ${name} AS col, NULL AS value, 'is null, and the column is to be NOT NULL' AS why
         FROM numbered WHERE ${quoteIdent(change.source.name)} IS NULL`,
      );
    }
  }
  const conflicts: string[] = [];
  const keys: { key: PlannedKey; kind: string }[] = [
    ...(plan.primaryKey ? [{ key: plan.primaryKey, kind: "primary key" }] : []),
    ...plan.unique.map((key) => ({ key, kind: "unique constraint" })),
  ];
  for (const { key, kind } of keys) {
    const parts = key.columns.map((c) => byName.get(nameKey(c))!);
    // New columns hold their defaults; the copy itself refuses duplicates among those.
    if (parts.some((p) => !p.source)) continue;
    const values = parts.map(valueOf);
    conflicts.push(
      `SELECT row_, ${quoteLiteral(key.columns.join(", "))} AS col, ${
        values.length === 1 ? `left(${values[0]}::VARCHAR, 80)` : "NULL"
      } AS value, 'repeats the ${kind} "${key.name.replaceAll("'", "''")}" of an earlier row' AS why
       FROM numbered WHERE ${values.map((v) => `${v} IS NOT NULL`).join(" AND ")}
       QUALIFY row_number() OVER (PARTITION BY ${values.join(", ")} ORDER BY row_) > 1`,
    );
  }
  for (const fk of analysis.foreignKeys) {
    const change = byName.get(nameKey(fk.column))!;
    if (!change.source) continue;
    let parent: string;
    if (fk.table.id === undefined) {
      const referenced = byName.get(nameKey(fk.refColumn))!;
      if (!referenced.source) continue;
      parent = `SELECT ${valueOf(referenced)} AS v FROM ${table}`;
    } else {
      parent = `SELECT ${quoteIdent(fk.refColumn)} AS v FROM ${
        qualified(fk.table.schema, fk.table.name)
      }`;
    }
    const value = valueOf(change);
    invalid.push(
      `SELECT row_, ${
        quoteLiteral(change.planned.name)
      } AS col, left(${value}::VARCHAR, 80) AS value,
         'has no match in ${
        quoteLiteral(`${fk.table.name}.${fk.refColumn}`).slice(1, -1)
      } (foreign key "${fk.name.replaceAll("'", "''")}")' AS why
       FROM numbered WHERE ${value} IS NOT NULL
         AND ${value} NOT IN (SELECT v FROM (${parent}) WHERE v IS NOT NULL)`,
    );
  }

  const required = columns.filter((c) =>
    !c.source && c.notNull && c.defaultSql === null && !c.planned.type.serial
  );
  if (required.length > 0) {
    const [{ n }] = await session.rows(`SELECT count(*) AS n FROM ${table}`) as [{ n: bigint }];
    if (n > 0n) {
      throw ApiError.invalidData(
        `Cannot update table "${current.name}": new column "${
          required[0]!.planned.name
        }" is NOT NULL without a default, and the table has ${n} rows`,
        required.map((c) => ({
          column: c.planned.name,
          message: `New column "${c.planned.name}" is NOT NULL without a default`,
        })),
      );
    }
  }
  const invalidRows = await failingRows(session, numbered, invalid);
  if (invalidRows.length > 0) {
    throw ApiError.invalidData(
      `Cannot update table "${current.name}": ${summarise(invalidRows)}`,
      invalidRows,
    );
  }
  const conflictRows = await failingRows(session, numbered, conflicts);
  if (conflictRows.length > 0) {
    throw ApiError.conflict(
      `Cannot update table "${current.name}": ${conflictRows[0]!.message}`,
      conflictRows,
    );
  }
}

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

/** Records the updated table in the metadata: address, column ids, constraints, sequences. */
async function recordUpdate(
  session: Session,
  analysis: UpdateAnalysis,
  newSequences: ReadonlyMap<ColumnChange, string>,
): Promise<void> {
  const { row, plan, columns } = analysis;
  let next = await nextColumnId(session, row.id);
  const ids = columns.map((c) => c.source?.id ?? next++);
  await rewriteTable(
    session,
    row.id,
    plan.ref,
    columns.map((c, i) => ({ id: ids[i]!, name: c.planned.name })),
    next,
  );
  const idOf = (name: string) =>
    ids[columns.findIndex((c) => nameKey(c.planned.name) === nameKey(name))]!;
  await recordConstraints(session, row.id, [
    ...(plan.primaryKey
      ? [{
        kind: "PRIMARY KEY" as const,
        name: plan.primaryKey.name,
        columnIds: plan.primaryKey.columns.map(idOf),
      }]
      : []),
    ...plan.unique.map((k) => ({
      kind: "UNIQUE" as const,
      name: k.name,
      columnIds: k.columns.map(idOf),
    })),
    ...analysis.foreignKeys.map((fk) => ({
      kind: "FOREIGN KEY" as const,
      name: fk.name,
      columnIds: [idOf(fk.column)],
      refTableId: fk.table.id ?? row.id,
      refColumnId: fk.table.id === undefined ? idOf(fk.refColumn) : fk.refColumnId,
    })),
  ]);
  for (const [change, sequence] of newSequences) {
    const id = ids[columns.indexOf(change)]!;
    await forgetSequences(session, row.id, [id]);
    await recordSequence(session, row.id, id, plan.ref.schema, sequence);
  }
}

/** Drops the sequences of dropped columns, and those replaced by `replaced`'s new ones. */
async function dropSequencesOf(
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

/** The constraints a plan gives, in their response form, to compare with the current ones. */
function plannedConstraints(
  plan: TablePlan,
  foreignKeys: readonly ResolvedForeignKey[],
): Table["constraints"] {
  return {
    primary_key: plan.primaryKey
      ? { name: plan.primaryKey.name, columns: [...plan.primaryKey.columns] }
      : null,
    unique: plan.unique.map((k) => ({ name: k.name, columns: [...k.columns] })),
    foreign_keys: foreignKeys.map((fk) => ({
      name: fk.name,
      column: fk.column,
      reference_table: fk.table.name,
      reference_column: fk.refColumn,
      reference_schema: fk.table.schema,
    })),
  };
}

/**
 * What other tables' foreign keys into this table would lose: the column they reference,
 * its key, its type, or the shared schema.
 */
async function referenceProblems(
  session: Session,
  current: Table,
  plan: TablePlan,
  columns: readonly ColumnChange[],
  into: readonly ForeignKeyRow[],
  moved: boolean,
): Promise<ErrorDetail[]> {
  if (into.length === 0) return [];
  const tables = await describeRows(session, [...new Set(into.map((fk) => fk.tableId))]);
  const keys = [...(plan.primaryKey ? [plan.primaryKey] : []), ...plan.unique]
    .filter((k) => k.columns.length === 1).map((k) => nameKey(k.columns[0]!));
  const problems: ErrorDetail[] = [];
  for (const fk of into) {
    const from = tables.get(fk.tableId)!;
    const by = `foreign key "${fk.name}" of table "${from.schema}.${from.name}"`;
    const referenced = current.columns.find((c) => c.id === fk.refColumnId);
    const change = columns.find((c) => c.source?.id === fk.refColumnId);
    const push = (message: string) =>
      problems.push({ column: referenced?.name, constraint: fk.name, message });
    if (moved) {
      push(`Table "${current.name}" is referenced by ${by}, and foreign keys stay within a schema`);
    } else if (!change) {
      push(`Column "${referenced?.name}" is referenced by ${by}; drop that foreign key first`);
    } else if (!keys.includes(nameKey(change.planned.name))) {
      push(
        `Column "${change.planned.name}" is referenced by ${by}, so it must stay by itself ` +
          `the primary key or unique`,
      );
    } else if (change.retyped) {
      push(
        `Column "${change.planned.name}" is referenced by ${by}, so its type cannot change ` +
          `from ${change.source!.type} to ${change.type}`,
      );
    }
  }
  return problems;
}

/**
 * Runs detail queries (row, column, value, why) over the rows `numbered` gives, and gives
 * the first failing rows in order.
 */
async function failingRows(
  session: Session,
  numbered: string,
  queries: readonly string[],
): Promise<ErrorDetail[]> {
  if (queries.length === 0) return [];
  const rows = await session.rows(
    `WITH numbered AS MATERIALIZED (${numbered})
     SELECT * FROM (${queries.join(" UNION ALL ")}) ORDER BY 1, 2 LIMIT ${MAX_DETAILS}`,
  );
  return rows.map((r) => {
    const column = r.col as string;
    const value = r.value as string | null;
    return {
      row: Number(r.row_),
      column,
      ...(value === null ? {} : { value }),
      message: value === null
        ? `Column "${column}" of row ${Number(r.row_)} ${r.why}`
        : `Value "${value}" of column "${column}" in row ${Number(r.row_)} ${r.why}`,
    };
  });
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

/** Applies an analysed update in one transaction: ALTER where it works, else a rebuild. */
export async function applyUpdate(
  database: Database,
  analysis: UpdateAnalysis,
  keyed?: KeyedWrite<{ table: Table; how: UpdateHow }>,
): Promise<{ table: Table; how: UpdateHow }> {
  // The answer, kept with its key (if it has one) in the update's transaction.
  const answer = async (session: Session, how: "altered" | "rebuilt") => {
    const described = { id: analysis.row.id, ...analysis.plan.ref };
    const result = { table: (await describeTables(session, [described]))[0]!, how };
    if (keyed) await keepAnswer(session, keyed, result);
    return result;
  };
  if (canAlter(analysis)) {
    try {
      return await database.transaction(async (session) => {
        await alterTable(session, analysis);
        return await answer(session, "altered");
      });
    } catch (error) {
      if (error instanceof ApiError) throw error;
      // DuckDB refused an ALTER (a dependency it keeps, say); the rebuild does it all.
    }
  }
  try {
    return await database.transaction(async (session) => {
      await rebuildTable(session, analysis);
      return await answer(session, "rebuilt");
    });
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const message = engineMessage(error);
    const what = `Cannot update table "${analysis.current.name}": ${message}`;
    if (/duplicate key|PRIMARY KEY or UNIQUE/i.test(message)) throw ApiError.conflict(what);
    if (/^(Constraint|Conversion) Error/.test(String((error as Error)?.message))) {
      throw ApiError.invalidData(what);
    }
    throw error;
  }
}
