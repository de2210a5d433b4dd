/**
 * Answers kept for `Idempotency-Key`s: one row per keyed write that committed, written in
 * the write's own transaction. Lookups take the newest row within the time to live.
 *
 * Unlike the DuckDB engine, no instance keeps in memory which keys may have an answer:
 * another instance on the same database may have kept one, so every lookup asks.
 *
 * @module
 */

import type { KeptAnswer, KeyedWrite } from "../store.ts";
import type { Session } from "./database.ts";
import { META } from "./metadata.ts";
import { findAnswerSql, keptAnswer } from "../shared/kept_answers.ts";

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

/** Keeps a keyed write's answer for `result`, in the session's transaction. */
export async function keepAnswer<R>(
  session: Session,
  keyed: KeyedWrite<R>,
  result: R,
): Promise<void> {
  await keepAnswers(session, [{ keyed, result }]);
}

/** Keeps the answers of several keyed writes in one statement, in the session's transaction. */
export async function keepAnswers(
  session: Session,
  writes: readonly { readonly keyed: KeyedWrite<unknown>; readonly result: unknown }[],
): Promise<void> {
  if (writes.length === 0) return;
  const column = <T>(value: (keyed: KeyedWrite<unknown>, result: unknown) => T) =>
    writes.map(({ keyed, result }) => value(keyed, result));
  await session.run(
    `INSERT INTO ${META}.idempotency_keys (scope, key, fingerprint, answer, created_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])`,
    [
      column((k) => storable(k.scope)),
      column((k) => storable(k.key)),
      column((k) => k.fingerprint()),
      column((k, r) => JSON.stringify(k.answer(r))),
      column((k) => k.at),
    ],
  );
}

/** Deletes the answers kept before `before`. */
export async function forgetAnswers(session: Session, before: number): Promise<void> {
  await session.run(`DELETE FROM ${META}.idempotency_keys WHERE created_at < $1`, [before]);
}
