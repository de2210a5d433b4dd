/**
 * One connection for one unit of work, and the slots that bound DuckDB's file readers.
 *
 * @module
 */

import {
  type DuckDBAppender,
  type DuckDBConnection,
  type DuckDBListValue,
  type DuckDBType,
  type DuckDBValue,
  listValue,
} from "@duckdb/node-api";
import { ApiError } from "../../errors.ts";
import type { Row } from "./database.ts";

/** A statement that reads a file with one of DuckDB's readers. */
const READS_FILE = /\b(read_json|read_json_objects|read_csv|sniff_csv)\s*\(/i;

/** What a session tells the database about a failure it met. */
export interface Failures {
  /** The error to throw for `error`, noting a database it leaves invalidated. */
  failure(error: unknown): unknown;
  /** Whether `error` is a commit that was saved before the database failed (see above). */
  committed(error: unknown): boolean;
}

/** A statement that begins or ends a transaction, and which. */
const TRANSACTION_CONTROL = /^\s*(BEGIN|START|COMMIT|END|ROLLBACK|ABORT)\b/i;

/**
 * `values` when there are any. Given values, even none, the bindings split the text into
 * statements, prepare the last and run it: three hand-offs to DuckDB's threads, each waiting
 * for the event loop, where a statement without values takes one.
 */
export function bound(values: DuckDBValue[] | undefined): DuckDBValue[] | undefined {
  return values?.length ? values : undefined;
}

/**
 * The types `values` bind as, when given: without them the bindings infer each from the
 * JavaScript value, and bind an integral `number` as INTEGER or BIGINT even beyond BIGINT.
 */
export type BoundTypes = DuckDBType[] | undefined;

/**
 * What {@link Database.streamLines} streams: `first`, then the text of each row of `sql`
 * followed by `terminator` ("\n" unless told), `separator` between rows, then `last`.
 */
export interface Lines {
  readonly first: string;
  /** A statement whose first column is text. */
  readonly sql: string;
  /** The statement's bound values. */
  readonly values?: DuckDBValue[];
  /** The types of `values`, where they are not to be inferred (see {@link BoundTypes}). */
  readonly types?: BoundTypes;
  readonly separator?: string;
  readonly terminator?: string;
  readonly last?: string;
}

/**
 * One connection for one unit of work. Sharing a connection between overlapping queries
 * is unsafe in the DuckDB bindings, so a session is never used by two requests at once.
 */
export class Session {
  /**
   * Whether a transaction this session began with `BEGIN` is still open. A pooled connection
   * must never be handed on inside one: an insert group appending there would never commit.
   */
  #inTransaction = false;

  /**
   * `readers`: the slots a statement reading a file waits for (see DUCKDB_READER_BYTES);
   * `failures`: the database's judgement of what fails.
   */
  constructor(
    readonly connection: DuckDBConnection,
    private readonly readers: Slots,
    private readonly failures: Failures,
  ) {}

  /** Whether a transaction begun through this session is still open. */
  get inTransaction(): boolean {
    return this.#inTransaction;
  }

  /** Runs one statement with bound values (of `types`, when given) and returns its rows. */
  async rows(sql: string, values: DuckDBValue[] = [], types?: BoundTypes): Promise<Row[]> {
    const reader = await this.#statement(
      sql,
      () => this.connection.runAndReadAll(sql, bound(values), types),
      true,
    );
    return reader?.getRowObjectsJS() ?? [];
  }

  /** `values` as one bound value of a list type. */
  list(values: readonly (string | number)[]): DuckDBListValue {
    return listValue([...values]);
  }

  /** Runs one statement with bound values (of `types`, when given), ignoring any result. */
  async run(sql: string, values: DuckDBValue[] = [], types?: BoundTypes): Promise<void> {
    await this.#statement(sql, () => this.connection.run(sql, bound(values), types), false);
  }

  /** Runs one statement with bound values and returns how many rows it changed. */
  async changes(sql: string, values: DuckDBValue[] = []): Promise<number> {
    const result = await this.#statement(sql, () => this.connection.run(sql, bound(values)), true);
    return result?.rowsChanged ?? 0;
  }

  /**
   * Runs `statement`, in a reader slot when `sql` reads a file. One that committed before the
   * database failed has done its work, but its result went with the instance: undefined then,
   * unless the caller `reads` the result and there was one (a transaction's end has none),
   * which fails saying the change was saved.
   */
  async #statement<T>(
    sql: string,
    statement: () => Promise<T>,
    reads: boolean,
  ): Promise<T | undefined> {
    const control = TRANSACTION_CONTROL.exec(sql)?.[1]?.toUpperCase();
    // An ending statement that fails leaves the state unknown: count it as still open.
    if (control !== undefined && control !== "BEGIN" && control !== "START") {
      this.#inTransaction = true;
    }
    try {
      const result = await (READS_FILE.test(sql) ? this.readers.run(statement) : statement());
      if (control !== undefined) this.#inTransaction = control === "BEGIN" || control === "START";
      return result;
    } catch (error) {
      if (!this.failures.committed(error)) throw this.failures.failure(error);
      this.#inTransaction = false;
      if (reads && control === undefined) {
        throw ApiError.unavailable(
          "The change was saved, but the database failed before it could say what it changed; " +
            "check before repeating it",
          1,
        );
      }
      return undefined;
    }
  }

  /**
   * An appender to `schema.table`. In a transaction its rows go into it; outside one, each
   * flush (closing flushes) is a transaction of its own, committed as it returns.
   */
  appender(schema: string, table: string): Promise<DuckDBAppender> {
    return this.connection.createAppender(table, schema);
  }

  /**
   * Flushes and closes `appender`: outside a transaction, that commits its rows. A flush
   * that committed before the database failed has done its work and returns.
   */
  close(appender: DuckDBAppender): void {
    try {
      appender.closeSync();
    } catch (error) {
      if (!this.failures.committed(error)) throw error;
    }
  }
}

/** A counting semaphore: at most `free` runs at once, the others wait first come, first served. */
export class Slots {
  readonly #waiting: (() => void)[] = [];

  constructor(private free: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so a newcomer cannot take it first.
      const next = this.#waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}
