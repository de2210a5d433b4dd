/**
 * The limits and pieces of inserting small bodies of rows together, as one group.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { RowsInMemory } from "../../ingest/spool.ts";
import type { Session } from "./database.ts";
import { keepAnswers } from "./idempotency.ts";
import type { LoadCounts } from "./rows.ts";
import type { ArrivingRows, KeyedWrite } from "../store.ts";

/** Most bodies inserted together. */
export const GROUP_MEMBERS = 1000;
/** Most bytes of bodies inserted together. */
export const GROUP_BYTES = 16 * 1024 * 1024;
/**
 * Most milliseconds a group of inserts waits for the writers it expects back (see
 * GroupCommit): about the time the service takes to answer a group of a dozen and read
 * their next bodies. A lone writer never waits for others.
 */
export const GROUP_GATHER_MS = 2;

/** A small body of rows waiting to be inserted with others into the same table. */
export interface SmallInsert {
  readonly ref: TableRef;
  readonly rows: ArrivingRows;
  readonly small: RowsInMemory;
  readonly keyed?: KeyedWrite<Inserted>;
}

/** What an insert of records answers. */
export type Inserted = { table: Table } & LoadCounts;

/** Keeps the answers of a group's members that carry a key, in the group's transaction. */
export async function keepGroupAnswers(
  session: Session,
  table: Table,
  members: readonly SmallInsert[],
): Promise<void> {
  await keepAnswers(
    session,
    members.flatMap((m) =>
      m.keyed
        ? [{ keyed: m.keyed as KeyedWrite<unknown>, result: { table, inserted: m.small.rows } }]
        : []
    ),
  );
}

/** Writes `texts` into a new file at `path`, a line break after each. */
export async function writeLines(path: string, texts: readonly Uint8Array[]): Promise<void> {
  const joined = new Uint8Array(texts.reduce((n, t) => n + t.length + 1, 0));
  let at = 0;
  for (const text of texts) {
    joined.set(text, at);
    joined[at + text.length] = 0x0a;
    at += text.length + 1;
  }
  await Deno.writeFile(path, joined, { createNew: true, mode: 0o600 });
}
