/**
 * The locks of changes: PostgreSQL advisory locks held until the transaction ends, so that
 * every instance of the service on one database serialises its changes to one table, one
 * schema or one template name, and work on different ones runs side by side.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { LockMode, LockRequest } from "../shared/locks.ts";
import type { Batched, Session } from "./database.ts";

export {
  type LockMode,
  type LockRequest,
  schemaLock,
  tableLock,
  templateLock,
} from "../shared/locks.ts";

/**
 * The prefix of every key, so the service's locks are told from any other program's on the
 * same database: a key is hashed to PostgreSQL's 64-bit lock space with `hashtextextended`.
 */
const NAMESPACE = "table-service:";

/** The lock the bootstrap of the metadata takes, so two instances starting at once take turns. */
export const BOOTSTRAP_LOCK: LockRequest = { key: "bootstrap", mode: "exclusive" };

/**
 * The lock of loads into a table that skip or update rows whose key exists, one at a time:
 * two at once meet each other's keys in no order and deadlock (409 after a second), where
 * taking turns each sees the other's rows.
 */
export function upsertLock(ref: TableRef): LockRequest {
  // After the table's key ("u" > "t"): keys are taken in sorted order.
  return { key: `upsert:${nameKey(ref.schema)}.${nameKey(ref.name)}`, mode: "exclusive" };
}

/**
 * Takes every requested key in `session`'s open transaction, waiting for each, held until it
 * commits or rolls back. Keys are taken in sorted order, a key asked for in both modes
 * exclusively, so that two changes asking for overlapping keys take them in the same order;
 * a deadlock among other locks PostgreSQL detects and answers (409).
 *
 * @example
 * ```ts ignore
 * await database.transaction(async (session) => {
 *   await takeLocks(session, [schemaLock("public", "shared"), tableLock(ref, "exclusive")]);
 *   // … change the table …
 * });
 * ```
 */
export async function takeLocks(
  session: Session,
  requests: readonly LockRequest[],
): Promise<void> {
  const statement = lockStatement(requests);
  if (statement) await session.batch([statement]);
}

/**
 * The one statement that takes `requests`' locks (each key once, exclusive over shared), or
 * undefined when there are none. PostgreSQL evaluates a select list in the order written, so
 * the keys are taken in sorted order. It is prepared, one statement for each sequence of
 * modes, and its keys are its arguments: it goes in the same round trip as its transaction's
 * BEGIN (database.ts), and is planned once per connection.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lockStatement } from "./locks.ts";
 *
 * const statement = lockStatement([
 *   { key: "table:public.t", mode: "shared" },
 *   { key: "schema:public", mode: "shared" },
 *   { key: "table:public.t", mode: "exclusive" },
 * ]);
 * assert.deepEqual(statement, {
 *   prepared: {
 *     name: "locks_sx",
 *     text: "SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0)), " +
 *       "pg_advisory_xact_lock(hashtextextended($2, 0))",
 *   },
 *   args: ["table-service:schema:public", "table-service:table:public.t"],
 * });
 * ```
 */
export function lockStatement(requests: readonly LockRequest[]): Batched | undefined {
  const wanted = new Map<string, LockMode>();
  for (const { key, mode } of requests) {
    if (wanted.get(key) !== "exclusive") wanted.set(key, mode);
  }
  const keys = [...wanted.keys()].sort();
  if (keys.length === 0) return undefined;
  const modes = keys.map((key) => wanted.get(key)!);
  const calls = modes.map((mode, i) =>
    `${mode === "exclusive" ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"}` +
    `(hashtextextended($${i + 1}, 0))`
  );
  const letters = modes.map((mode) => mode === "exclusive" ? "x" : "s").join("");
  return {
    prepared: {
      // PostgreSQL cuts a name past 63 bytes: a long sequence is named by its hash.
      name: `locks_${
        letters.length <= MOST_LETTERS ? letters : createHash("sha1").update(letters).digest("hex")
      }`,
      text: `SELECT ${calls.join(", ")}`,
    },
    args: keys.map((key) => NAMESPACE + key),
  };
}

/** Most modes a lock statement's name spells out, one letter each. */
const MOST_LETTERS = 40;
