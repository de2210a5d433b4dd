/**
 * Reading a kept idempotency answer, the same on both engines: the query for the newest
 * answer of a key within its time to live, and its row as a {@link KeptAnswer}.
 *
 * @module
 */

import type { KeptAnswer, StoredAnswer } from "../store.ts";

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
