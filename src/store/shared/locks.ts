/**
 * The keys of the store's locks, alike on both engines: DuckDB takes them in its own lock set,
 * PostgreSQL as advisory locks in the change's transaction. Either takes a change's keys in
 * sorted order, so two changes asking for overlapping keys cannot deadlock.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";

/** How a key is held: many shared holders, or one exclusive holder. */
export type LockMode = "shared" | "exclusive";

/** One key to take, and how. */
export interface LockRequest {
  readonly key: string;
  readonly mode: LockMode;
}

/** The lock of a schema; schema keys sort before table keys ("s" < "t"), so schemas come first. */
export function schemaLock(schema: string, mode: LockMode): LockRequest {
  return { key: `schema:${nameKey(schema)}`, mode };
}

/** The lock of a table. */
export function tableLock(ref: TableRef, mode: LockMode): LockRequest {
  return { key: `table:${nameKey(ref.schema)}.${nameKey(ref.name)}`, mode };
}

/** The exclusive lock of a template's name. */
export function templateLock(name: string): LockRequest {
  return { key: `template:${nameKey(name)}`, mode: "exclusive" };
}
