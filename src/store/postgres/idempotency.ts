/**
 * Answers kept for `Idempotency-Key`s: one row per keyed write that committed, written in
 * the write's own transaction. Lookups take the newest row within the time to live.
 *
 * Unlike the DuckDB engine, no instance keeps in memory which keys may have an answer:
 * another instance on the same database may have kept one, so every lookup asks.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { KeptAnswer, KeyedWrite, StoredAnswer } from "../store.ts";
import type { Database, Session } from "./database.ts";
import { takeLocks } from "./locks.ts";
import { META } from "./metadata.ts";
import {
  findAnswerSql,
  keepAnswers as keepAnswersIn,
  keptAnswer,
  type KeptWrite,
  takeAnswerSql,
  takenAnswer,
} from "../shared/kept_answers.ts";

/**
 * `text` as PostgreSQL can hold it: text there cannot contain NUL, which a scope (a token's
 * subject may hold any character; the route joins its parts with NUL) or a key may. The
 * escape is reversible, so two different texts never meet.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storable } from "./idempotency.ts";
 *
 * assert.equal(storable("a\u0000b"), "a\\0b");
 * assert.notEqual(storable("a\u0000b"), storable("a\\0b"));
 * ```
 */
export function storable(text: string): string {
  return text.replaceAll("\\", "\\\\").replaceAll("\u0000", "\\0");
}

/** The newest answer kept for `key` in `scope` at or after `since`. */
export async function findAnswer(
  session: Session,
  scope: string,
  key: string,
  since: number,
): Promise<KeptAnswer | undefined> {
  return keptAnswer(
    await session.rows(
      { name: "find_answer", text: findAnswerSql(META) },
      [storable(scope), storable(key), since],
    ),
  );
}

/**
 * `database.transaction(work)` for a write that may carry an `Idempotency-Key`: the key is
 * claimed first ({@link claimKey}), so the same request reaching two instances at once runs
 * once.
 */
export function keyedTransaction<T>(
  database: Database,
  keyed: KeyedWrite<never> | undefined,
  work: (session: Session) => Promise<T>,
): Promise<T> {
  return database.transaction(async (session) => {
    if (keyed) await claimKey(session, keyed);
    return await work(session);
  });
}

/**
 * Takes `keyed`'s key until the session's transaction ends, before any other lock, so that a
 * request with the same key on any instance waits for this one; 409
 * `idempotency_key_in_use` when one committed an answer for it after this request looked
 * (see the route's check): this request changes nothing, and its retry gets that answer.
 * One process cannot tell by itself, as the DuckDB engine can: its instances share only the
 * database.
 */
export async function claimKey(session: Session, keyed: KeyedWrite<never>): Promise<void> {
  const scope = storable(keyed.scope);
  const key = storable(keyed.key);
  await takeLocks(session, [{ key: `answer:${scope}\n${key}`, mode: "exclusive" }]);
  const kept = await session.rows(
    {
      name: "kept_since",
      text: `SELECT 1 FROM ${META}.idempotency_keys
         WHERE scope = $1 AND key = $2 AND created_at >= $3 LIMIT 1`,
    },
    [scope, key, keyed.since],
  );
  if (kept.length > 0) throw ApiError.idempotencyKeyInUse(keyed.key);
}

/** `result`, its answer kept first, in the session's transaction, when the write is keyed. */
export async function keepAnswer<R>(
  session: Session,
  keyed: KeyedWrite<R> | undefined,
  result: R,
): Promise<R> {
  if (keyed) await keepAnswers(session, [{ keyed, result }]);
  return result;
}

/** Keeps the answers of several keyed writes in one statement, in the session's transaction. */
export function keepAnswers(session: Session, writes: readonly KeptWrite[]): Promise<void> {
  return keepAnswersIn(session, META, writes, storable);
}

/** Takes the answer kept for `key` in `scope` away, if kept at or after `since`. */
export async function takeAnswer(
  session: Session,
  scope: string,
  key: string,
  since: number,
): Promise<StoredAnswer | undefined> {
  return takenAnswer(
    await session.rows(takeAnswerSql(META), [storable(scope), storable(key)]),
    since,
  );
}
