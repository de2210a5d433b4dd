/**
 * Tables in DuckDB: creating, describing, listing and dropping them, and running a change
 * to definitions under locks only a look can tell.
 *
 * @module
 */

import type { TablePlan } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite } from "../store.ts";
import { dropTableIn, existingSchema, existingTable, sameIds } from "./catalog_rows.ts";
import { noted, type StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { buildTable, canonicalTypes, checkColumns } from "./ddl.ts";
import { described, descriptionKey } from "./descriptions.ts";
import { keepAnswer } from "./idempotency.ts";
import type { LockRequest } from "./locks.ts";
import { findTable, tablesById } from "./metadata.ts";
import { referencedTableIds } from "./metadata_constraints.ts";
import { describeTables } from "./metadata_describe.ts";
import { heldBy, schemaLock, tableLock } from "./store_locks.ts";

/** Creates a table from a checked plan; with `ifNotExists` an existing table is returned. */
export async function createTable(
  context: StoreContext,
  plan: TablePlan,
  options: {
    readonly ifNotExists: boolean;
    readonly keyed?: KeyedWrite<{ table: Table; created: boolean }>;
  },
): Promise<{ table: Table; created: boolean }> {
  noted(context, options.keyed);
  const { database } = context;
  const locks: LockRequest[] = [
    schemaLock(plan.ref.schema, "shared"),
    tableLock(plan.ref, "exclusive"),
    // DuckDB records a foreign key on the referenced table's catalog entry too.
    ...plan.foreignKeys.map((fk) => tableLock(fk.reference, "exclusive")),
  ];
  const defaults = await database.withSession((session) => checkColumns(session, plan));
  return await context.locks.run(
    locks,
    () =>
      context.descriptions.changing(() =>
        database.transaction(async (session) => {
          const schema = await existingSchema(session, plan.ref.schema);
          const existing = await findTable(session, { schema, name: plan.ref.name });
          let result;
          if (existing) {
            if (!options.ifNotExists) {
              throw ApiError.conflict(
                `Table "${existing.schema}.${existing.name}" already exists`,
              );
            }
            result = { table: (await describeTables(session, [existing]))[0]!, created: false };
          } else {
            const at = { schema, name: plan.ref.name };
            result = { table: await buildTable(session, at, plan, defaults), created: true };
          }
          return await keepAnswer(session, options.keyed, result);
        }), { affects: heldBy(locks), leaves: (result) => [described(result.table)] }),
  );
}

/** The table's description, from the cache when nothing changed since it was read. */
export function getTable({ database, descriptions }: StoreContext, ref: TableRef): Promise<Table> {
  return descriptions.get(descriptionKey(ref), () =>
    // One snapshot for the metadata and DuckDB's catalog: a concurrent drop cannot fall between.
    database.transaction(async (session) => {
      const row = await existingTable(session, ref);
      return (await describeTables(session, [row]))[0]!;
    }));
}

/**
 * The table's description as `session`'s open transaction sees it, from the cache when
 * that holds the same; `since` is the descriptions' stamp from before the transaction
 * began. 404 when the table is not there.
 */
export async function describeIn(
  { descriptions }: StoreContext,
  session: Session,
  ref: TableRef,
  since: number,
): Promise<Table> {
  // DuckDB takes a transaction's snapshot at its first statement that reads the database,
  // not at BEGIN: this lookup is that statement, so the cache is consulted once it is fixed.
  const row = await existingTable(session, ref);
  return await descriptions.get(
    descriptionKey(ref),
    async () => (await describeTables(session, [row]))[0]!,
    since,
  );
}

/** Drops a table; 409 when another table's foreign key references it. */
export function dropTable(
  context: StoreContext,
  ref: TableRef,
  keyedWrite?: KeyedWrite<TableRef>,
): Promise<TableRef> {
  const keyed = noted(context, keyedWrite);
  const { database } = context;
  // The tables this one references change too (DuckDB keeps the link on both sides), so
  // they are locked as well.
  let seen: { id: number; referenced: number[] };
  return underLookedUpLocks(
    context,
    ref,
    () =>
      database.withSession(async (session) => {
        const row = await existingTable(session, ref);
        seen = { id: row.id, referenced: await referencedTableIds(session, row.id) };
        return [
          schemaLock(ref.schema, "shared"),
          tableLock(ref, "exclusive"),
          ...(await tablesById(session, seen.referenced)).map((r) => tableLock(r, "exclusive")),
        ];
      }),
    () =>
      database.transaction(async (session) => {
        const row = await existingTable(session, ref);
        const referenced = await referencedTableIds(session, row.id);
        if (row.id !== seen.id || !sameIds(referenced, seen.referenced)) return undefined;
        await dropTableIn(session, row);
        return await keepAnswer(session, keyed, { schema: row.schema, name: row.name });
      }),
  );
}

/**
 * Runs `work`, a change to definitions, under locks only a look can tell: `look` gives
 * the locks to take, and `work`, holding them, answers undefined when what it finds now
 * needs other locks. Then all is tried again; a table that keeps changing is 409 after
 * four tries. Descriptions go uncached only while `work` runs, not while it waits.
 */
export async function underLookedUpLocks<T>(
  { locks: lockSet, descriptions }: StoreContext,
  ref: TableRef,
  look: () => Promise<LockRequest[]>,
  work: (held: ReadonlySet<string>) => Promise<T | undefined>,
  leaves?: (result: T) => Table,
): Promise<T> {
  for (let attempt = 0;; attempt++) {
    const locks = await look();
    const held = new Set(locks.map((l) => l.key));
    const result = await lockSet.run(
      locks,
      () =>
        descriptions.changing(() => work(held), {
          affects: heldBy(locks),
          leaves: (result) => result === undefined || !leaves ? [] : [described(leaves(result))],
        }),
    );
    if (result !== undefined) return result;
    if (attempt >= 3) throw ApiError.conflict(`Table "${ref.name}" is changing; try again`);
  }
}

/**
 * The canonical types of a plan's columns, in order; 422 when a type is unknown or a
 * default is not one scalar expression of its column's type.
 */
export function columnTypes({ database }: StoreContext, plan: TablePlan): Promise<string[]> {
  return database.withSession(async (session) => {
    await checkColumns(session, plan);
    return await canonicalTypes(session, plan);
  });
}
