/**
 * What each engine gives the operations written once for both: a session for reads, one way
 * to run a locked change, and the metadata lookups those operations need. The operations
 * (schemas.ts, templates.ts here) hold the rules; an engine's `core.ts` only says how.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import type { KeyedWrite } from "../store.ts";
import type { LockRequest } from "./locks.ts";
import type { RowEstimates } from "./estimates.ts";

/** A value bound to a `$n` parameter. */
export type SqlValue = string | number | boolean | null;

/** Statements with `$n` parameters, as both engines' sessions run them. */
export interface SqlSession {
  /** The rows of one statement. */
  rows(sql: string, params?: SqlValue[]): Promise<Record<string, unknown>[]>;
  /** Runs one statement. */
  run(sql: string, params?: SqlValue[]): Promise<unknown>;
}

/** A session that binds a list as one parameter too, each engine its own way. */
export interface ListSession {
  rows(sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]>;
  run(sql: string, params?: readonly unknown[]): Promise<unknown>;
  /** `values` as one parameter, to be read as a list (`unnest($n::integer[])`). */
  list(values: readonly (string | number)[]): unknown;
}

/** A table's row in the metadata. */
export interface TableRow {
  readonly id: number;
  readonly schema: string;
  readonly name: string;
}

/** The metadata lookups the shared operations make. */
export interface CoreMetadata<S> {
  /** The stored spelling of a schema, case-insensitively, or undefined. */
  findSchema(session: S, name: string): Promise<string | undefined>;
  /** Schema names in order, without internal ones. */
  allSchemas(session: S): Promise<string[]>;
  /** A page of tables in schema, then name, order, and how many there are in all. */
  pageOfTables(
    session: S,
    filter: { schema?: string; visibleSchemas?: readonly string[] },
    offset: number,
    limit: number,
  ): Promise<{ rows: TableRow[]; total: number }>;
  /** Tables as the API shows them, in the order of `tables`. */
  describeTables(session: S, tables: readonly TableRow[]): Promise<Table[]>;
  /** The expression of a new template version's id, where the engine does not draw it itself. */
  readonly nextTemplateId?: string;
}

/** How a change runs beyond its locks. */
export interface ChangeOptions {
  /** The change may alter the descriptions of the tables its locks cover. */
  readonly redescribes?: boolean;
}

/** One engine as the shared operations see it. */
export interface Core<S extends SqlSession> {
  /** Runs `work` in a session of its own. */
  read<T>(work: (session: S) => Promise<T>): Promise<T>;
  /** Runs `work`'s reads in one snapshot: they see the database as of one moment. */
  snapshot<T>(work: (session: S) => Promise<T>): Promise<T>;
  /**
   * Runs `work` in one transaction holding `locks`, keeping its result as `keyed`'s answer in
   * the same transaction: it commits with the change or not at all.
   */
  change<T>(
    locks: readonly LockRequest[],
    keyed: KeyedWrite<T> | undefined,
    work: (session: S) => Promise<T>,
    options?: ChangeOptions,
  ): Promise<T>;
  readonly metadata: CoreMetadata<S>;
  /** Rows estimated from the engine's statistics. */
  readonly estimates: RowEstimates<S>;
}
