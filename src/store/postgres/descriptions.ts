/**
 * The tables this process described last, each with the stamp that tells whether its
 * description still holds (metadata_describe.ts). A request that finds its table here sends
 * its locks, a check of the stamp and its own statement in one round trip, where describing
 * the table first takes one more; a check that fails rolls the request back, and it runs again
 * the long way, describing the table anew.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import { Lru } from "../../lru.ts";
import type { Batched, Session } from "./database.ts";
import {
  type Described,
  describeNamedBatched,
  describeTables,
  isStale,
  namedDescription,
  stillDescribedBatched,
} from "./metadata_describe.ts";
import { existingTable } from "./tables.ts";

/** A transaction of the store's: `work` in it, the `opening` statements sent with its BEGIN. */
export type Transaction<T> = (
  work: (session: Session) => Promise<T>,
  opening: readonly Batched[],
) => Promise<T>;

/** Most descriptions kept; the one used least recently goes first. */
const MOST = 1_000;

/** Descriptions by the table's name, as this process last took them. */
export class KnownDescriptions {
  readonly #known = new Lru<string, Described>(MOST);

  /** The description of the table `ref` names, when one is known. */
  get(ref: TableRef): Described | undefined {
    return this.#known.get(keyOf(ref));
  }

  /** Keeps `described` as what `ref` names. */
  remember(ref: TableRef, described: Described): void {
    this.#known.set(keyOf(ref), described);
  }

  /**
   * Takes `locks` (one statement) in `session`'s transaction and describes the table `ref`
   * names, in one round trip, remembering the description; 404 when there is no such table
   * (existingTable says why).
   */
  async locked(session: Session, ref: TableRef, locks: Batched): Promise<Table> {
    const [, rows] = await session.batch([locks, describeNamedBatched(ref)]);
    const described = namedDescription(rows![0]!);
    if (!described) return (await describeTables(session, [await existingTable(session, ref)]))[0]!;
    this.remember(ref, described);
    return described.table;
  }

  /**
   * `work` in `transaction` opened with `locks` and the check that `described`, what
   * {@link get} gave for `ref`, still holds: both go with the work's first statement.
   * Undefined, the transaction rolled back, when it no longer holds (then forgotten): the
   * caller goes the long way, with {@link locked}.
   */
  async holding<T>(
    ref: TableRef,
    described: Described,
    transaction: Transaction<T>,
    locks: Batched,
    work: (session: Session) => Promise<T>,
  ): Promise<T | undefined> {
    let stale = false;
    try {
      return await transaction(async (session) => {
        try {
          return await work(session);
        } catch (error) {
          stale = isStale(error);
          throw error;
        }
      }, [locks, ...stillDescribedBatched(ref, described)]);
    } catch (error) {
      if (!stale) throw error;
      this.forget(ref);
      return undefined;
    }
  }

  /** Forgets what `ref` names: its description was found stale. */
  forget(ref: TableRef): void {
    this.#known.delete(keyOf(ref));
  }
}

function keyOf(ref: TableRef): string {
  return `${nameKey(ref.schema)}\n${nameKey(ref.name)}`;
}
