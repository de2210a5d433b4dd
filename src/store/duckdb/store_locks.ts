/**
 * The lock requests of the store's changes, and which descriptions a change's locks may alter.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { type LockRequest, schemaLock, tableLock } from "../shared/locks.ts";

import type { TableRow } from "./metadata.ts";

export { schemaLock, tableLock, templateLock } from "../shared/locks.ts";

/** The locks of an append: shared, so many loads may append at once; DDL waits for them. */
export function appendLocks(ref: TableRef): LockRequest[] {
  return [schemaLock(ref.schema, "shared"), tableLock(ref, "shared")];
}

/**
 * The locks of an append that skips or updates rows whose key exists: an append's, and one
 * such load into the table at a time. Two at once would both write a key neither saw, and
 * DuckDB refuses the second commit; taking turns, each sees the other's rows.
 */
export function upsertLocks(ref: TableRef): LockRequest[] {
  // After the table's key ("u" > "t"), as every lock is taken in key order.
  return [...appendLocks(ref), {
    key: `upsert:${tableLock(ref, "shared").key}`,
    mode: "exclusive",
  }];
}

/**
 * Whether a change under `locks` may alter a table's description: it holds the table or
 * its schema exclusively, or a table the description names in a foreign key (a rename or a
 * column's rename shows there). Every change locks exclusively the tables it alters.
 */
export function heldBy(locks: readonly LockRequest[]): (table: Table) => boolean {
  const exclusive = new Set(locks.filter((l) => l.mode === "exclusive").map((l) => l.key));
  const held = (ref: TableRef) =>
    exclusive.has(schemaLock(ref.schema, "exclusive").key) ||
    exclusive.has(tableLock(ref, "exclusive").key);
  return (table) =>
    held(table) ||
    table.constraints.foreign_keys.some((fk) =>
      held({ schema: fk.reference_schema, name: fk.reference_table })
    );
}

/** The locks of an update: shared on the schemas, exclusive on every table it touches. */
export function lockKeys(row: TableRow, touched: readonly TableRef[]): LockRequest[] {
  return [row, ...touched].flatMap((ref) => [
    schemaLock(ref.schema, "shared"),
    tableLock(ref, "exclusive"),
  ]);
}
