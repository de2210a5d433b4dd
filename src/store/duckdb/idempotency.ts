/**
 * Answers kept for `Idempotency-Key`s: one row per keyed write that committed, written in
 * the write's own transaction.
 *
 * There is no unique constraint on (scope, key): the service lets one request per key run
 * at a time, and a row that expired stays until swept while a new one for the same key is
 * added (DuckDB checks a key deleted and inserted again in one transaction as a clash).
 * Lookups take the newest row within the time to live.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { Database, Session } from "./database.ts";
import { META } from "./metadata.ts";
import {
  findAnswerSql,
  keepAnswers as keepAnswersIn,
  keptAnswer,
  type KeptWrite,
  takeAnswerSql,
  takenAnswer,
} from "../shared/kept_answers.ts";
import type { KeptAnswer, KeyedWrite, StoredAnswer } from "../store.ts";

/** The newest answer kept for `key` in `scope` at or after `since`. */
export async function findAnswer(
  session: Session,
  scope: string,
  key: string,
  since: number,
): Promise<KeptAnswer | undefined> {
  return keptAnswer(await session.rows(findAnswerSql(META), [scope, key, since]));
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

/**
 * Keeps the answers of several keyed writes in one statement (a group commit's members), in
 * the session's transaction.
 */
export function keepAnswers(session: Session, writes: readonly KeptWrite[]): Promise<void> {
  return keepAnswersIn(session, META, writes);
}

/**
 * Takes the answer kept for `key` in `scope` away, if kept at or after `since`. Of two
 * transactions deleting one row DuckDB fails the second with a conflict: it found nothing.
 */
export async function takeAnswer(
  database: Database,
  scope: string,
  key: string,
  since: number,
): Promise<StoredAnswer | undefined> {
  try {
    const rows = await database.transaction((session) =>
      session.rows(takeAnswerSql(META), [scope, key])
    );
    return takenAnswer(rows, since);
  } catch (error) {
    if (/conflict/i.test(String((error as Error)?.message))) return undefined;
    throw error;
  }
}

/**
 * Which keys may have an answer kept, in memory, so that a request with a new key (the usual
 * case) costs no query: a lookup was the largest part of a keyed insert's time, and queries
 * queue for the database's connections. It holds a superset of the keys kept within their
 * time to live: a key is noted before its write begins, so one whose write committed is
 * always there, and one whose write failed only costs a query that finds nothing. Keys are
 * held as a 48-bit hash of scope and key (a clash, too, only costs a query), with the newest
 * time each was noted: some 50 bytes a key.
 */
export class KeptKeys {
  readonly #noted = new Map<number, number>();

  /** The keys of every answer kept in the file. */
  static async load(session: Session): Promise<KeptKeys> {
    const kept = new KeptKeys();
    const rows = await session.rows(
      `SELECT scope, key, max(created_at) AS at FROM ${META}.idempotency_keys GROUP BY scope, key`,
    );
    for (const row of rows) kept.note(row.scope as string, row.key as string, Number(row.at));
    return kept;
  }

  /** Notes that an answer may be kept for `key` in `scope` from `at` on. */
  note(scope: string, key: string, at: number): void {
    const hash = hashOf(scope, key);
    if ((this.#noted.get(hash) ?? -Infinity) < at) this.#noted.set(hash, at);
  }

  /** False when no answer can be kept for `key` in `scope` at or after `since`. */
  mayHave(scope: string, key: string, since: number): boolean {
    return (this.#noted.get(hashOf(scope, key)) ?? -Infinity) >= since;
  }

  /** Forgets the keys last noted before `before`. */
  forget(before: number): void {
    for (const [hash, at] of this.#noted) if (at < before) this.#noted.delete(hash);
  }
}

function hashOf(scope: string, key: string): number {
  return createHash("sha256").update(`${scope}\u0000${key}`).digest().readUIntBE(0, 6);
}
