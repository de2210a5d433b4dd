/**
 * Carrying out an analysed table update on PostgreSQL with ALTER TABLE, in the
 * caller's transaction: PostgreSQL's DDL is transactional, so a failure anywhere rolls back
 * every statement and the metadata with them.
 *
 * The order matters: constraints no longer wanted go first (so dropping and retyping their
 * columns is free), then dropped columns, renames, retypes, defaults and new columns (in a
 * table rewritten first when the places dropped columns keep leave no room for them); the
 * rows are checked against the NOT NULLs, keys and foreign keys to come, which are then
 * added; the table moves and is renamed last; the metadata follows.
 *
 * @module
 */

import { nameKey } from "../../catalog/names.ts";
import { ApiError, summarise } from "../../errors.ts";
import { probing, type Session } from "./database.ts";
import { createSequence, ownSequence } from "./ddl.ts";
import { META } from "./metadata.ts";
import { recordUpdatedTable } from "../shared/metadata_tables.ts";
import { forgetSequences, recordSequences } from "../shared/metadata_rows.ts";
import {
  foreignKeySignature,
  keySignature,
  plannedColumnKey,
  plannedForeignKeySignature,
  plannedKeySignatures,
} from "../shared/update_analysis.ts";
import { refuseRequiredColumns as refuseRequired } from "../shared/required_columns.ts";
import { retypeSql } from "./retype.ts";
import { columnPlacesLeft, compactTable } from "./update_rebuild.ts";
import { qualified, quoteIdent } from "./sql.ts";
import type { ColumnChange, UpdateAnalysis } from "./update_analysis.ts";
import {
  castFailures,
  duplicateCheck,
  failingRows,
  nullCheck,
  orphanCheck,
  type RowCheck,
} from "./update_checks.ts";

/** A key or foreign key as PostgreSQL holds it, by column ids (or `new:name`). */
interface EngineConstraint {
  readonly name: string;
  readonly signature: string;
}

/** Applies the update in the caller's transaction; 422 or 409 naming failing rows. */
export async function alterTable(session: Session, analysis: UpdateAnalysis): Promise<void> {
  const { current, plan, columns } = analysis;
  const table = qualified(current.schema, current.name);
  const alter = (clause: string) => session.run(`ALTER TABLE ${table} ${clause}`);
  await refuseRequiredColumns(session, table, analysis);

  const idOf = plannedColumnKey(columns);
  const wanted = new Set(plannedKeySignatures(plan, analysis.foreignKeys, idOf));
  const existing = await engineConstraints(session, analysis);
  const have = new Set(existing.map((c) => c.signature));
  // Foreign keys first: a table's own unique key may be what its foreign key references.
  const drop = existing.filter((c) => !wanted.has(c.signature))
    .sort((a, b) => Number(b.signature.startsWith("F")) - Number(a.signature.startsWith("F")));
  for (const c of drop) await alter(`DROP CONSTRAINT ${quoteIdent(c.name)}`);
  for (const column of analysis.dropped) await alter(`DROP COLUMN ${quoteIdent(column.name)}`);
  await renameColumns(session, table, analysis);

  const order = recordOrder(analysis);
  const failures = [];
  for (const c of columns.filter((c) => c.retyped)) {
    const name = quoteIdent(c.planned.name);
    const drawsFromSequence = analysis.serialIds.has(c.source!.id);
    // A literal default may have no automatic cast to the new type; it is set again below.
    if (c.source!.default !== null && !drawsFromSequence) {
      await alter(`ALTER COLUMN ${name} DROP DEFAULT`);
    }
    try {
      // In a savepoint: a value that does not convert leaves the transaction usable, to
      // find every such row.
      await probing(session).run(
        `ALTER TABLE ${table} ALTER COLUMN ${name} TYPE ${c.type} USING ${
          retypeSql(name, c.source!.type, c.type)
        }`,
      );
    } catch (error) {
      if (!/^22/.test(String((error as { code?: string }).code))) throw error;
      failures.push(
        ...await castFailures(session, table, order, c.planned.name, c.source!.type, c.type),
      );
    }
  }
  if (failures.length > 0) {
    failures.sort((a, b) => a.row! - b.row!);
    throw ApiError.invalidData(
      `Cannot update table "${current.name}": ${summarise(failures)}`,
      failures,
    );
  }
  for (const c of columns) {
    if (!c.source) continue;
    const name = quoteIdent(c.planned.name);
    const reset = c.retyped && c.source.default !== null && !analysis.serialIds.has(c.source.id);
    if (!c.defaultChanged && !reset) continue;
    await alter(
      c.defaultSql === null
        ? `ALTER COLUMN ${name} DROP DEFAULT`
        : `ALTER COLUMN ${name} SET DEFAULT (${c.defaultSql})`,
    );
  }
  const added = columns.filter((c) => !c.source).length;
  if (added > 0 && await columnPlacesLeft(session, current) < added) {
    await compactTable(session, analysis.row.id, current);
  }
  const sequences = await addColumns(session, table, analysis);

  const checks: RowCheck[] = [];
  for (const c of columns) {
    if (c.source && c.notNull && c.notNullChanged) {
      checks.push(nullCheck(table, order, c.planned.name));
    }
  }
  for (const fk of analysis.foreignKeys) {
    const change = columns.find((c) => nameKey(c.planned.name) === nameKey(fk.column))!;
    if (!change.source || have.has(plannedForeignKeySignature(fk, idOf))) continue;
    const parent = fk.table.id === undefined
      ? { table, column: fk.refColumn }
      : { table: qualified(fk.table.schema, fk.table.name), column: fk.refColumn };
    checks.push(
      orphanCheck(
        table,
        order,
        change.planned.name,
        parent,
        `${fk.table.name}.${fk.refColumn} (foreign key "${fk.name}")`,
      ),
    );
  }
  const invalid = await failingRows(session, checks);
  if (invalid.length > 0) {
    throw ApiError.invalidData(
      `Cannot update table "${current.name}": ${summarise(invalid)}`,
      invalid,
    );
  }
  const keys = [
    ...(plan.primaryKey ? [{ key: plan.primaryKey, kind: "primary key", sql: "PRIMARY KEY" }] : []),
    ...plan.unique.map((key) => ({ key, kind: "unique constraint", sql: "UNIQUE" })),
  ];
  const conflicts: RowCheck[] = [];
  for (const { key, kind, sql } of keys) {
    if (have.has(keySignature(sql === "UNIQUE" ? "U" : "P", key.columns.map(idOf)))) continue;
    // New columns hold one default in every row; adding the key refuses that by itself.
    if (key.columns.some((name) => typeof idOf(name) === "string")) continue;
    conflicts.push(duplicateCheck(table, order, key.columns, `${kind} "${key.name}"`));
  }
  const repeated = await failingRows(session, conflicts);
  if (repeated.length > 0) {
    throw ApiError.conflict(
      `Cannot update table "${current.name}": ${repeated[0]!.message}`,
      repeated,
    );
  }
  for (const c of columns) {
    if (c.source && c.notNullChanged) {
      await alter(
        `ALTER COLUMN ${quoteIdent(c.planned.name)} ${c.notNull ? "SET" : "DROP"} NOT NULL`,
      );
    }
  }
  for (const { key, sql } of keys) {
    const signature = keySignature(sql === "UNIQUE" ? "U" : "P", key.columns.map(idOf));
    if (!have.has(signature)) await alter(`ADD ${sql} (${key.columns.map(quoteIdent).join(", ")})`);
  }
  for (const fk of analysis.foreignKeys) {
    if (have.has(plannedForeignKeySignature(fk, idOf))) continue;
    const target = fk.table.id === undefined ? table : qualified(fk.table.schema, fk.table.name);
    await alter(
      `ADD FOREIGN KEY (${quoteIdent(fk.column)}) REFERENCES ${target} (${
        quoteIdent(fk.refColumn)
      })`,
    );
  }
  await moveTable(session, analysis);
  await recordUpdate(session, analysis, sequences);
}

/** 422 when a new NOT NULL column without a default would meet existing rows. */
function refuseRequiredColumns(
  session: Session,
  table: string,
  { current, columns }: UpdateAnalysis,
): Promise<void> {
  return refuseRequired(current.name, columns, async () => {
    const [{ n }] = await session.rows(`SELECT count(*) AS n FROM ${table}`) as [{ n: string }];
    return n;
  });
}

/** Renames columns; through temporary names when one takes another kept column's name. */
async function renameColumns(session: Session, table: string, analysis: UpdateAnalysis) {
  const renamed = analysis.columns.filter((c) => c.renamed);
  const kept = new Set(analysis.columns.flatMap((c) => c.source ? [nameKey(c.source.name)] : []));
  const swapping = renamed.some((c) =>
    nameKey(c.planned.name) !== nameKey(c.source!.name) && kept.has(nameKey(c.planned.name))
  );
  const rename = (from: string, to: string) =>
    session.run(`ALTER TABLE ${table} RENAME COLUMN ${quoteIdent(from)} TO ${quoteIdent(to)}`);
  if (swapping) {
    for (const c of renamed) await rename(c.source!.name, `\u0001renaming_${c.source!.id}`);
    for (const c of renamed) await rename(`\u0001renaming_${c.source!.id}`, c.planned.name);
  } else {
    for (const c of renamed) await rename(c.source!.name, c.planned.name);
  }
}

/** Adds the new columns; a serial one with a sequence of its own. Returns those sequences. */
async function addColumns(
  session: Session,
  table: string,
  { current, columns }: UpdateAnalysis,
): Promise<Map<ColumnChange, string>> {
  const sequences = new Map<ColumnChange, string>();
  for (const c of columns) {
    if (c.source) continue;
    const name = quoteIdent(c.planned.name);
    let defaultSql = c.defaultSql;
    if (c.planned.type.serial) {
      const sequence = await createSequence(session, current, c.planned.name, c.type);
      sequences.set(c, sequence.name);
      defaultSql = sequence.defaultSql;
    }
    await session.run(
      `ALTER TABLE ${table} ADD COLUMN ${name} ${c.type}` +
        (defaultSql === null ? "" : ` DEFAULT (${defaultSql})`) + (c.notNull ? " NOT NULL" : ""),
    );
    const sequence = sequences.get(c);
    if (sequence) await ownSequence(session, current, sequence, c.planned.name);
  }
  return sequences;
}

/** Moves the table to its new schema and name; its owned sequences move with it. */
async function moveTable(session: Session, analysis: UpdateAnalysis): Promise<void> {
  const { current, plan, row } = analysis;
  if (analysis.moved) {
    // Through a name no table has, so neither schema's tables can clash on the way.
    const passing = `\u0001moving_${row.id}`;
    await session.run(
      `ALTER TABLE ${qualified(current.schema, current.name)} RENAME TO ${quoteIdent(passing)}`,
    );
    await session.run(
      `ALTER TABLE ${qualified(current.schema, passing)} SET SCHEMA ${quoteIdent(plan.ref.schema)}`,
    );
    await session.run(
      `ALTER TABLE ${qualified(plan.ref.schema, passing)} RENAME TO ${quoteIdent(plan.ref.name)}`,
    );
  } else if (analysis.renamed) {
    await session.run(
      `ALTER TABLE ${qualified(current.schema, current.name)} RENAME TO ${
        quoteIdent(plan.ref.name)
      }`,
    );
  }
}

/** Records the updated table in the metadata: address, column ids, constraints, sequences. */
async function recordUpdate(
  session: Session,
  analysis: UpdateAnalysis,
  sequences: ReadonlyMap<ColumnChange, string>,
): Promise<void> {
  const { row, plan, columns } = analysis;
  const ids = await recordUpdatedTable(session, analysis);
  // Sequences of dropped columns went with them; a column whose default no longer draws
  // from its sequence is no longer serial.
  const gone = [
    ...analysis.dropped.map((c) => c.id),
    ...columns.filter((c) => c.source && c.defaultChanged).map((c) => c.source!.id),
  ];
  await forgetSequences(session, row.id, gone);
  await session.run(`UPDATE ${META}.sequences SET schema_name = $2 WHERE table_id = $1`, [
    row.id,
    plan.ref.schema,
  ]);
  await recordSequences(
    session,
    row.id,
    plan.ref.schema,
    [...sequences].map(([change, name]) => ({ columnId: ids[columns.indexOf(change)]!, name })),
  );
}

/** The record order of the rows while the update runs: the primary key's, else physical. */
function recordOrder({ current, columns }: UpdateAnalysis): string {
  const pk = current.constraints.primary_key;
  if (!pk) return "ctid";
  const names = pk.columns.map((name) => {
    const id = current.columns.find((c) => c.name === name)?.id;
    return columns.find((c) => c.source?.id === id)?.planned.name;
  });
  return names.every((n) => n !== undefined) ? names.map((n) => quoteIdent(n!)).join(", ") : "ctid";
}

/**
 * The table's primary key, unique and foreign key constraints as PostgreSQL holds them,
 * their columns by the metadata's column ids.
 */
async function engineConstraints(
  session: Session,
  { current }: UpdateAnalysis,
): Promise<EngineConstraint[]> {
  const rows = await session.rows(
    `SELECT k.conname, k.contype, k.confrelid = k.conrelid AS self,
       ARRAY(SELECT a.attname::text FROM unnest(k.conkey) AS u(n)
         JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n) AS columns,
       (SELECT a.attname::text FROM pg_attribute a
         WHERE a.attrelid = k.confrelid AND a.attnum = k.confkey[1]) AS ref_column,
       (SELECT m.column_id FROM ${META}.tables t
          JOIN pg_namespace n ON n.nspname = t.schema_name
          JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = t.table_name
          JOIN ${META}.columns m ON m.table_id = t.table_id
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = m.column_name
          WHERE c.oid = k.confrelid AND a.attnum = k.confkey[1]) AS ref_column_id,
       (SELECT t.table_id FROM ${META}.tables t
          JOIN pg_namespace n ON n.nspname = t.schema_name
          JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = t.table_name
          WHERE c.oid = k.confrelid) AS ref_table_id
     FROM pg_constraint k
     WHERE k.conrelid = $1::regclass AND k.contype IN ('p', 'u', 'f')`,
    [qualified(current.schema, current.name)],
  );
  const idOf = (name: string) => String(current.columns.find((c) => c.name === name)?.id ?? name);
  return rows.map((r) => {
    const ids = (r.columns as string[]).map(idOf);
    const signature = r.contype !== "f"
      ? keySignature(r.contype === "p" ? "P" : "U", ids)
      : r.self
      ? foreignKeySignature(ids[0]!, "self", idOf(r.ref_column as string))
      : foreignKeySignature(ids[0]!, r.ref_table_id as number, r.ref_column_id as number);
    return { name: r.conname as string, signature };
  });
}
