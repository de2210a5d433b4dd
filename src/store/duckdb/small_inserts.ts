/**
 * Inserting small bodies of rows together, as one group: through the appender when their
 * values are plain, else in one `read_json` statement, else each on its own.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { discard, type RowsInMemory } from "../../ingest/spool.ts";
import type { Session } from "./database.ts";
import { keepAnswers } from "./idempotency.ts";
import { insertRows } from "./rows.ts";
import type { ArrivingRows, KeyedWrite, LoadCounts } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { GroupCommit } from "./group_commit.ts";
import { APPEND_BYTES, appendRows, plainRows } from "./append.ts";
import { loadPlainly } from "./plain_loads.ts";

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

/** Small inserts gathered into groups (see {@link insertTogether}). */
export type SmallInserts = GroupCommit<SmallInsert, Inserted>;

/**
 * The store's group commit of small inserts; `alone` inserts one member on its own, for a
 * group that cannot be inserted together.
 */
export function smallInserts(
  context: StoreContext,
  alone: (member: SmallInsert) => Promise<Inserted>,
): SmallInserts {
  return new GroupCommit<SmallInsert, Inserted>(
    (members) => insertTogether(context, members, alone),
    { members: GROUP_MEMBERS, size: GROUP_BYTES, gatherMs: GROUP_GATHER_MS },
    (member) => member.small.bytes.length,
  );
}

/**
 * Inserts small bodies of rows with the same keys into the same table in one transaction:
 * through the appender when their values are plain, else in one statement. When that
 * fails, each body is inserted on its own, so a bad body gets its own answer and the
 * others are not held to it. A lone body that is not plain goes its own way at once:
 * trying it twice would only draw serial values twice (the appender draws none).
 */
async function insertTogether(
  context: StoreContext,
  members: readonly SmallInsert[],
  alone: (member: SmallInsert) => Promise<Inserted>,
): Promise<PromiseSettledResult<Inserted>[]> {
  const rows = members.reduce((n, m) => n + m.small.rows, 0);
  const table = await appendTogether(context, members, rows) ??
    (members.length > 1 ? await insertJoined(context, members, rows) : undefined);
  if (!table) return await Promise.allSettled(members.map(alone));
  return members.map((m) => ({
    status: "fulfilled",
    value: { table, inserted: m.small.rows },
  }));
}

/**
 * Appends a group's `rows` with the appender when they are few and plain (see
 * {@link plainRows}), in one transaction: the appender's own, as its one flush commits
 * them. That keeps the group off DuckDB's asynchronous calls, each a hand-over to
 * another thread and back, which an explicit `BEGIN` and `COMMIT` would be
 * (docs/decisions.md, Rows: "A group's flush is its commit"). Members with an idempotency
 * key need their answers in the same transaction, so then it is an explicit one after
 * all. The table they went into, or undefined, having changed nothing, when they are not
 * plain or anything fails.
 */
async function appendTogether(
  context: StoreContext,
  members: readonly SmallInsert[],
  rows: number,
): Promise<Table | undefined> {
  const bytes = members.reduce((n, m) => n + m.small.bytes.length, 0);
  if (bytes > APPEND_BYTES) return undefined;
  const { ref, small: first } = members[0]!;
  const { database } = context;
  return await loadPlainly(context, ref, first, async (table, mapping) => {
    const plain = plainRows(table, mapping, members.map((m) => m.small.bytes), rows);
    if (!plain) return undefined;
    if (members.some((m) => m.keyed)) {
      await database.transaction(async (session) => {
        await appendRows(session, table, plain);
        await keepGroupAnswers(session, table, members);
      });
    } else await database.withSession((session) => appendRows(session, table, plain));
    return table;
  });
}

/**
 * Inserts a group's `rows` in one `read_json` statement from one file; the table they went
 * into, or undefined, having changed nothing, when anything fails.
 */
function insertJoined(
  context: StoreContext,
  members: readonly SmallInsert[],
  rows: number,
): Promise<Table | undefined> {
  const { ref, small: first } = members[0]!;
  return loadPlainly(context, ref, first, async (table, mapping) => {
    const path = `${context.spoolDir}/${crypto.randomUUID()}.json`;
    try {
      await writeLines(path, members.map((m) => m.small.bytes));
      await context.database.transaction(async (session) => {
        const inserted = await insertRows(session, table, { path, rows }, mapping);
        if (inserted !== rows) throw new Error(`${inserted} of ${rows} rows inserted`);
        await keepGroupAnswers(session, table, members);
      });
      return table;
    } finally {
      await discard({ path });
    }
  });
}
