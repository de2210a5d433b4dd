/**
 * Tables on PostgreSQL: creating, describing, listing and dropping them, and the column
 * types of a plan. Descriptions are read in each request's own transaction, never cached:
 * another instance may have changed the table since.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite } from "../store.ts";
import { checkTableDrop } from "../shared/drop_checks.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { buildTable, checkColumns } from "./ddl.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { schemaLock, tableLock, takeLocks } from "./locks.ts";
import { findTable, type TableRow } from "./metadata.ts";
import { forgetTables, referencingTables } from "../shared/metadata_tables.ts";
import { describeNamedBatched, describeTables, namedTable } from "./metadata_describe.ts";
import { existingSchema } from "./metadata.ts";
import { qualified } from "./sql.ts";

/** The metadata row of table `ref`; 404 naming the schema or the table that is missing. */
export async function existingTable(session: Session, ref: TableRef): Promise<TableRow> {
  const row = await findTable(session, ref);
  if (row) return row;
  const schema = await existingSchema(session, ref.schema);
  throw ApiError.notFound(`Table "${schema}.${ref.name}" does not exist`);
}

/**
 * Creates a table from a checked plan; with `ifNotExists` an existing table is returned.
 * Holds its schema's lock and those of the tables it references shared (so none of them is
 * dropped or changed meanwhile by any instance), its own exclusive.
 */
export async function createTable(
  { database }: StoreContext,
  plan: TablePlan,
  options: {
    readonly ifNotExists: boolean;
    readonly keyed?: KeyedWrite<{ table: Table; created: boolean }>;
  },
): Promise<{ table: Table; created: boolean }> {
  const checked = await database.withSession((session) => checkColumns(session, plan));
  return await keyedTransaction(database, options.keyed, async (session) => {
    await takeLocks(session, [
      schemaLock(plan.ref.schema, "shared"),
      tableLock(plan.ref, "exclusive"),
      ...plan.foreignKeys.map((fk) => tableLock(fk.reference, "shared")),
    ]);
    const schema = await existingSchema(session, plan.ref.schema);
    const existing = await findTable(session, { schema, name: plan.ref.name });
    let result;
    if (existing) {
      if (!options.ifNotExists) {
        throw ApiError.conflict(`Table "${existing.schema}.${existing.name}" already exists`);
      }
      result = { table: (await describeTables(session, [existing]))[0]!, created: false };
    } else {
      const at = { schema, name: plan.ref.name };
      result = { table: await buildTable(session, at, plan, checked), created: true };
    }
    return await keepAnswer(session, options.keyed, result);
  });
}

/** The table's description; 404 when the schema or the table does not exist. */
export function getTable({ database }: StoreContext, ref: TableRef): Promise<Table> {
  // One snapshot for the metadata and the catalog: a concurrent drop cannot fall between.
  return database.transaction(async (session) => {
    const [, described] = await session.batch([
      "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY",
      describeNamedBatched(ref),
    ]);
    // When missing, existingTable says why (404).
    return namedTable(described![0]!) ??
      (await describeTables(session, [await existingTable(session, ref)]))[0]!;
  });
}

/** Drops a table; 409 when another table's foreign key references it. */
export function dropTable(
  { database }: StoreContext,
  ref: TableRef,
  keyed?: KeyedWrite<TableRef>,
): Promise<TableRef> {
  return keyedTransaction(database, keyed, async (session) => {
    await takeLocks(session, [schemaLock(ref.schema, "shared"), tableLock(ref, "exclusive")]);
    const row = await existingTable(session, ref);
    await dropTableIn(session, row);
    return await keepAnswer(session, keyed, { schema: row.schema, name: row.name });
  });
}

/**
 * Drops a table with its metadata in `session`'s transaction; 409 when another table's
 * foreign key references it.
 */
export async function dropTableIn(session: Session, row: TableRow): Promise<void> {
  checkTableDrop(row, await referencingTables(session, [row.id]));
  await forgetTables(session, [row.id]);
  // Its serial columns' sequences are owned by it and go with it.
  await session.run(`DROP TABLE ${qualified(row.schema, row.name)}`);
}

/**
 * PostgreSQL's canonical types of a plan's columns, in order; 422 naming each type
 * PostgreSQL lacks (with the type to use instead) and each default it cannot take.
 */
export async function columnTypes({ database }: StoreContext, plan: TablePlan): Promise<string[]> {
  const checked = await database.withSession((session) => checkColumns(session, plan));
  return [...checked.types];
}
