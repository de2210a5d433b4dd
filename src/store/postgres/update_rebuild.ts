/**
 * Putting a table's columns in a new order on PostgreSQL, which has no ALTER for column
 * order: the table is rebuilt in the caller's transaction, after the update's ALTERs have
 * given it its final columns, constraints, address and metadata.
 *
 * A new table is created under a passing name with the columns in the wanted order and the
 * hidden insertion column, the rows are copied with their insertion order kept, the
 * sequences of serial columns and the foreign keys of other tables move to it, the old
 * table goes and the new one takes its name. The metadata (table and column ids,
 * constraint names, sequences) names the table by address and columns by name, so it holds
 * as it is.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { Session } from "./database.ts";
import { createTableSql, freeSequenceName, INSERTION_COLUMN, PG_COLUMN_PLACES } from "./ddl.ts";
import { describeTables } from "./metadata_describe.ts";
import { qualified, quoteIdent } from "./sql.ts";
import type { UpdateAnalysis } from "./update_analysis.ts";

/** Rebuilds the updated table with its columns in the plan's order. */
export async function rebuildInOrder(session: Session, analysis: UpdateAnalysis): Promise<void> {
  const { row, plan } = analysis;
  const { schema, name } = plan.ref;
  const table = qualified(schema, name);
  const passing = `\u0001rebuilding_${row.id}`;
  const rebuilt = qualified(schema, passing);
  const [described] = await describeTables(session, [{ id: row.id, schema, name }]);
  const physical = await session.rows(
    `SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type,
       pg_get_expr(d.adbin, d.adrelid) AS default_sql, a.attnotnull
     FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`,
    [table],
  );
  const byName = new Map(physical.map((r) => [r.attname as string, r]));
  const columns = plan.columns.map((c) => {
    const found = byName.get(c.name)!;
    return {
      name: c.name,
      typeSql: found.type as string,
      defaultSql: found.default_sql as string | null,
      nullable: !(found.attnotnull as boolean),
    };
  });
  const { constraints } = described!;
  const self = (fk: { reference_schema: string; reference_table: string }) =>
    nameKey(fk.reference_schema) === nameKey(schema) &&
    nameKey(fk.reference_table) === nameKey(name);
  await session.run(
    createTableSql({ schema, name: passing }, {
      columns,
      primaryKey: constraints.primary_key?.columns,
      unique: constraints.unique.map((k) => k.columns),
      foreignKeys: constraints.foreign_keys.map((fk) => ({
        column: fk.column,
        table: self(fk) ? { schema, name: passing } : { schema, name: fk.reference_table },
        refColumn: fk.reference_column,
      })),
    }),
  );
  await copyRows(
    session,
    table,
    rebuilt,
    [...columns.map((c) => quoteIdent(c.name)), quoteIdent(INSERTION_COLUMN)],
  );
  await takeOver(session, { schema, name }, passing);
}

/**
 * Rebuilds the table as it stands (columns, defaults, keys, foreign keys, rows and their
 * insertion order) so that the columns it has dropped no longer count toward PostgreSQL's
 * 1,600 a table: PostgreSQL keeps a dropped column's place until the table is rewritten, and
 * ALTER TABLE never rewrites it that way.
 */
export async function compactTable(session: Session, id: number, ref: TableRef): Promise<void> {
  const table = qualified(ref.schema, ref.name);
  const passing = `\u0001compacting_${id}`;
  const rebuilt = qualified(ref.schema, passing);
  // Foreign keys are the one part LIKE leaves out; the table's own go with it, and come back.
  const own = await session.rows(
    `SELECT conname, pg_get_constraintdef(oid) AS definition FROM pg_constraint
     WHERE contype = 'f' AND conrelid = $1::regclass`,
    [table],
  );
  const live = await session.rows(
    `SELECT attname FROM pg_attribute
     WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [table],
  );
  await session.run(`CREATE TABLE ${rebuilt} (LIKE ${table} INCLUDING ALL)`);
  await copyRows(session, table, rebuilt, live.map((r) => quoteIdent(r.attname as string)));
  await takeOver(session, ref, passing);
  for (const fk of own) {
    await session.run(
      `ALTER TABLE ${table} ADD CONSTRAINT ${quoteIdent(fk.conname as string)} ${fk
        .definition as string}`,
    );
  }
}

/**
 * How many more columns the table can be given before PostgreSQL's limit of 1,600, which
 * counts the places of dropped columns too.
 */
export async function columnPlacesLeft(session: Session, ref: TableRef): Promise<number> {
  const [row] = await session.rows(
    `SELECT $2::int - max(attnum) AS places FROM pg_attribute
     WHERE attrelid = $1::regclass AND attnum > 0`,
    [qualified(ref.schema, ref.name), PG_COLUMN_PLACES],
  );
  return Number(row!.places);
}

/**
 * Copies every row of `table` into `rebuilt` with its insertion order, and sets the
 * insertion order's sequence past it.
 */
async function copyRows(
  session: Session,
  table: string,
  rebuilt: string,
  columns: readonly string[],
): Promise<void> {
  // One statement: PostgreSQL checks a self-reference's rows at its end, in any order.
  const names = columns.join(", ");
  await session.run(
    `INSERT INTO ${rebuilt} (${names}) OVERRIDING SYSTEM VALUE SELECT ${names} FROM ${table}`,
  );
  await session.run(
    `SELECT setval(pg_get_serial_sequence($1, $2),
       coalesce((SELECT max(${quoteIdent(INSERTION_COLUMN)}) FROM ${rebuilt}), 0) + 1, false)`,
    [rebuilt, INSERTION_COLUMN],
  );
}

/**
 * The table at `ref` replaced by the one built beside it under `passing`: the sequences
 * its columns own and the foreign keys of other tables into it move to the new one, which
 * takes its name and gives its constraints the names PostgreSQL would have given them.
 */
async function takeOver(session: Session, ref: TableRef, passing: string): Promise<void> {
  const table = qualified(ref.schema, ref.name);
  // Dropping the old table would drop the sequences it owns and the foreign keys into it.
  const sequences = await session.rows(
    `SELECT d.objid::regclass::text AS sequence, a.attname FROM pg_depend d
     JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
     JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
     WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
       AND d.refobjid = $1::regclass AND d.deptype = 'a'`,
    [table],
  );
  for (const s of sequences) {
    await session.run(`ALTER SEQUENCE ${s.sequence as string} OWNED BY NONE`);
  }
  const into = await session.rows(
    `SELECT conrelid::regclass::text AS owner, conname, pg_get_constraintdef(oid) AS definition
     FROM pg_constraint
     WHERE contype = 'f' AND confrelid = $1::regclass AND conrelid <> confrelid`,
    [table],
  );
  for (const fk of into) {
    await session.run(
      `ALTER TABLE ${fk.owner} DROP CONSTRAINT ${quoteIdent(fk.conname as string)}`,
    );
  }
  await session.run(`DROP TABLE ${table}`);
  await session.run(
    `ALTER TABLE ${qualified(ref.schema, passing)} RENAME TO ${quoteIdent(ref.name)}`,
  );
  await renameConstraints(session, ref.schema, ref.name, passing);
  for (const s of sequences) {
    await session.run(
      `ALTER SEQUENCE ${s.sequence as string} OWNED BY ${table}.${quoteIdent(s.attname as string)}`,
    );
  }
  // The definitions name the table by its name, which is now the rebuilt one's.
  for (const fk of into) {
    await session.run(
      `ALTER TABLE ${fk.owner} ADD CONSTRAINT ${quoteIdent(fk.conname as string)} ${fk
        .definition as string}`,
    );
  }
}

/**
 * Gives the rebuilt table's constraints the names PostgreSQL would have given them under
 * the table's own name, rather than the passing name's. (Users' names live in the metadata.)
 */
async function renameConstraints(
  session: Session,
  schema: string,
  name: string,
  passing: string,
): Promise<void> {
  const rows = await session.rows(
    `SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND starts_with(conname, $2)`,
    [qualified(schema, name), passing],
  );
  const given = new Set<string>();
  for (const r of rows) {
    const old = r.conname as string;
    const free = await freeSequenceName(session, schema, name + old.slice(passing.length));
    let wanted = free;
    for (let n = 2; given.has(wanted); n++) wanted = `${free}_${n}`;
    given.add(wanted);
    await session.run(
      `ALTER TABLE ${qualified(schema, name)} RENAME CONSTRAINT ${quoteIdent(old)} TO ${
        quoteIdent(wanted)
      }`,
    );
  }
}
