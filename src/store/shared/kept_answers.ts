/**
 * Reading a kept idempotency answer, the same on both engines: the query for the newest
 * answer of a key within its time to live, and its row as a {@link KeptAnswer}.
 *
 * @module
 */

import type { KeptAnswer, KeyedWrite, StoredAnswer } from "../store.ts";
import type { ListSession } from "./core.ts";

/**
 * The query for the newest answer kept for key `$2` in scope `$1` at or after `$3`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { findAnswerSql } from "./kept_answers.ts";
 *
 * assert.match(findAnswerSql("m"), /FROM m\.idempotency_keys/);
 * ```
 */
export function findAnswerSql(meta: string): string {
  return `SELECT fingerprint, answer FROM ${meta}.idempotency_keys
     WHERE scope = $1 AND key = $2 AND created_at >= $3
     ORDER BY created_at DESC LIMIT 1`;
}

/**
 * The statement taking the answers kept for key `$2` in scope `$1` away, returning them:
 * of two takers of one answer, one gets it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { takeAnswerSql } from "./kept_answers.ts";
 *
 * assert.match(takeAnswerSql("m"), /^DELETE FROM m\.idempotency_keys/);
 * ```
 */
export function takeAnswerSql(meta: string): string {
  return `DELETE FROM ${meta}.idempotency_keys WHERE scope = $1 AND key = $2
     RETURNING answer, created_at`;
}

/** The newest of the answers {@link takeAnswerSql} took, if it was kept at or after `since`. */
export function takenAnswer(
  rows: readonly Record<string, unknown>[],
  since: number,
): StoredAnswer | undefined {
  const newest = [...rows].sort((a, b) => Number(b.created_at) - Number(a.created_at))[0];
  if (!newest || Number(newest.created_at) < since) return undefined;
  return JSON.parse(newest.answer as string) as StoredAnswer;
}

/**
 * The answer in the first of `rows` (read by {@link findAnswerSql}), or undefined for none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keptAnswer } from "./kept_answers.ts";
 *
 * assert.equal(keptAnswer([]), undefined);
 * assert.equal(keptAnswer([{ fingerprint: "f", answer: "{}" }])?.fingerprint, "f");
 * ```
 */
export function keptAnswer(rows: readonly Record<string, unknown>[]): KeptAnswer | undefined {
  const row = rows[0];
  if (!row) return undefined;
  return {
    fingerprint: row.fingerprint as string,
    answer: JSON.parse(row.answer as string) as StoredAnswer,
  };
}

/** A keyed write and the result whose answer it keeps. */
export interface KeptWrite {
  readonly keyed: KeyedWrite<unknown>;
  readonly result: unknown;
}

/**
 * Keeps the answers of several keyed writes in one statement (a group commit's members), in
 * the session's transaction, in the metadata schema `meta`; `storable` makes a scope or key
 * text the engine can store (PostgreSQL's text holds no NUL).
 */
export async function keepAnswers(
  session: ListSession,
  meta: string,
  writes: readonly KeptWrite[],
  storable: (text: string) => string = (text) => text,
): Promise<void> {
  if (writes.length === 0) return;
  const column = (value: (keyed: KeyedWrite<unknown>, result: unknown) => string | number) =>
    session.list(writes.map(({ keyed, result }) => value(keyed, result)));
  await session.run(
    `INSERT INTO ${meta}.idempotency_keys (scope, key, fingerprint, answer, created_at)
     SELECT unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::text[]),
       unnest($5::bigint[])`,
    [
      column((k) => storable(k.scope)),
      column((k) => storable(k.key)),
      column((k) => k.fingerprint()),
      column((k, r) => JSON.stringify(k.answer(r))),
      column((k) => k.at),
    ],
  );
}

/** Deletes the answers kept in the metadata schema `meta` before `at`. */
export async function forgetAnswers(session: ListSession, meta: string, at: number): Promise<void> {
  await session.run(`DELETE FROM ${meta}.idempotency_keys WHERE created_at < $1`, [at]);
}
