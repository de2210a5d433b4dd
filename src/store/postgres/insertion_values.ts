/**
 * Values of a table's hidden insertion order (ddl.ts) reserved ahead for rows being copied:
 * the rows bring them, where drawing them by `nextval` row by row was about a third of
 * PostgreSQL's work on a plain load.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import type { Database, Session } from "./database.ts";
import { INSERTION_COLUMN } from "./ddl.ts";
import { qualified, quoteLiteral } from "./sql.ts";

/**
 * Values of a table's hidden insertion order (ddl.ts) for rows being copied, reserved a block
 * at a time by `reserve` (which answers a block's first value), given to the rows in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InsertionBlocks } from "./insertion_values.ts";
 *
 * const firsts = [7, 20];
 * const blocks = new InsertionBlocks(() => Promise.resolve(firsts.shift()!));
 * await blocks.reserveThrough(2);
 * await blocks.reserveThrough(2); // the first two rows have theirs already
 * await blocks.reserveThrough(3);
 * assert.deepEqual([blocks.next(), blocks.next(), blocks.next()], [7, 8, 20]);
 * assert.throws(() => blocks.next(), /reserved/);
 * ```
 */
export class InsertionBlocks {
  readonly #reserve: (count: number) => Promise<number>;
  /** The blocks not yet begun, as first value and count, in order. */
  readonly #waiting: number[] = [];
  #next = 0;
  #left = 0;
  /** Rows that have their values. */
  #reserved = 0;

  constructor(reserve: (count: number) => Promise<number>) {
    this.#reserve = reserve;
  }

  /** Reserves a block for the rows up to the `rows`th that have no value yet; throws when it cannot. */
  async reserveThrough(rows: number): Promise<void> {
    const count = rows - this.#reserved;
    if (count <= 0) return;
    const first = await this.#reserve(count);
    if (!Number.isSafeInteger(first + count)) throw new Error("The values are out of range");
    this.#waiting.push(first, count);
    this.#reserved = rows;
  }

  /** The next row's value. */
  next(): number {
    while (this.#left === 0) {
      if (this.#waiting.length === 0) throw new Error("No insertion value is reserved for a row");
      [this.#next, this.#left] = this.#waiting.splice(0, 2) as [number, number];
    }
    this.#left--;
    return this.#next++;
  }
}

/**
 * The sequence of `table`'s insertion order (ddl.ts), as SQL, asked in `session`'s
 * transaction, which holds the table's lock (a rebuild renames it); null when it has none.
 */
async function insertionSequence(session: Session, table: Table): Promise<string | null> {
  const [row] = await session.rows("SELECT pg_get_serial_sequence($1, $2) AS sequence", [
    qualified(table.schema, table.name),
    INSERTION_COLUMN,
  ]);
  return row!.sequence as string | null;
}

/** Longest a reservation waits for the sequence's lock before the copy does without it. */
const RESERVATION_WAIT_MS = 50;

/**
 * Reserves `count` consecutive values of the insertion order's `sequence`; answers the first.
 * It runs apart from the load's transaction ({@link Database.aside}), in one of its own: an
 * `ALTER SEQUENCE` that changes nothing takes the lock that holds every other `nextval` off
 * until `setval` has moved the sequence past the block, and lets it go at once rather than
 * at the load's end. That lock waits for every open transaction that has drawn from the
 * sequence, so it is given up after {@link RESERVATION_WAIT_MS}. Values a load that fails
 * leaves unused are skipped, as a rolled back insert's are.
 */
async function reserveInsertions(
  database: Database,
  sequence: string,
  count: number,
): Promise<number> {
  const [, [row]] = await database.aside([
    `ALTER SEQUENCE ${sequence} INCREMENT BY 1`,
    `SELECT n::text AS first, setval(${quoteLiteral(sequence)}, n + ${count - 1})
       FROM nextval(${quoteLiteral(sequence)}) AS n`,
  ], RESERVATION_WAIT_MS) as [unknown, Record<string, string>[]];
  return Number(row!.first);
}

/**
 * The insertion values of `session`'s copy into `table` (direct_inserts.ts), its first `rows`
 * rows' reserved, which spare PostgreSQL a `nextval` per row (about a third of a plain load's
 * time); undefined when they cannot be had, and the copy draws them itself.
 */
export async function reservingInsertions(
  database: Database,
  session: Session,
  table: Table,
  rows: number,
): Promise<InsertionBlocks | undefined> {
  const sequence = await insertionSequence(session, table);
  if (sequence === null || rows <= 0) return undefined;
  const blocks = new InsertionBlocks((count) => reserveInsertions(database, sequence, count));
  try {
    await blocks.reserveThrough(rows);
  } catch {
    return undefined;
  }
  return blocks;
}
