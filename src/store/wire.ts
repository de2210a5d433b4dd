/**
 * What the PostgreSQL protocol's listener asks of the store: a session holding one snapshot,
 * its results described and read as PostgreSQL's text. Part of the Store interface (store.ts).
 *
 * @module
 */

import type { QueryRequest, ResultColumn } from "./store.ts";

/**
 * A column of a result as the PostgreSQL wire protocol describes it: its name, its type as the
 * engine names it, and PostgreSQL's type oid and type modifier for it.
 */
export interface WireColumn extends ResultColumn {
  readonly oid: number;
  /** The type modifier (numeric's precision and scale), -1 for none. */
  readonly typmod: number;
}

/** A query's rows read a batch at a time, each value PostgreSQL's text of it (null for NULL). */
export interface WireRows {
  readonly columns: readonly WireColumn[];
  /** The next `count` rows, or fewer at the end of the result. */
  next(count: number): Promise<(string | null)[][]>;
  /**
   * The next `count` rows as whole `DataRow` messages of the protocol, every column in text,
   * when the engine builds them itself (fewer at the end); {@link next} and this read the same
   * rows, one or the other.
   */
  nextDataRows?(count: number): Promise<Uint8Array[]>;
  /** Lets the result go, read to its end or not. */
  close(): Promise<void>;
}

/**
 * One engine connection held for a PostgreSQL-protocol transaction (one statement's, or
 * `BEGIN` … `COMMIT`): every query in it reads one snapshot, checked by the guard of
 * `POST /query`. One query at a time.
 */
export interface WireSession {
  /** The columns `request` gives and the oids of the parameters it takes, without its rows. */
  describe(request: QueryRequest): Promise<{
    readonly columns: readonly WireColumn[];
    readonly params: readonly number[];
  }>;
  /**
   * Checks `request` as {@link WireSession.open} would before it runs (its syntax, what it
   * may read), without running it: PostgreSQL reports such errors at `Parse`.
   */
  check(request: QueryRequest): Promise<void>;
  /** Starts `request`; its rows are read from the answer, which must be closed first. */
  open(request: QueryRequest): Promise<WireRows>;
  /** Interrupts the statement under way, which fails with 408. */
  cancel(): void;
  /** Ends the transaction and gives the connection back. */
  end(): Promise<void>;
}
