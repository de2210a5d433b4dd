/**
 * Inserting rows into an existing PostgreSQL table: a small body of plain values straight in
 * with one statement, any other staged (read, checked, converted) by the DuckDB staging and
 * copied in; each in one transaction that holds the table's lock shared, so that inserts
 * into one table run side by side and a change of its definition waits.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import { ArrivingParts } from "../shared/arriving_parts.ts";
import { checkConflictKey, conflictKey } from "../shared/conflict_key.ts";
import type {
  ArrivingRows,
  KeyedWrite,
  LoadCounts,
  OnConflict,
  RowsPart,
  RowsSource,
} from "../store.ts";
import type { StoreContext } from "./context.ts";
import { copyStaged } from "./copy_rows.ts";
import type { Batched, Database, Session } from "./database.ts";
import {
  copyRows,
  DIRECT_BYTES,
  DIRECT_ROWS,
  directRows,
  fileSlices,
  insertDirect,
  plainMapping,
} from "./direct_inserts.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { reservingInsertions } from "./insertion_values.ts";
import { explainKeyConflict, isKeyConflict } from "./key_conflicts.ts";
import { lockStatement, schemaLock, tableLock, upsertLock } from "./locks.ts";
import type { KnownDescriptions } from "./descriptions.ts";

/** What an insert answers: the table and the counts. */
export type Inserted = { table: Table } & LoadCounts;

/**
 * Inserts arriving rows into an existing table, in one transaction: every row, or none. 404
 * for a missing table; 422 for `skip` or `update` on a table without a key to match rows by,
 * and for rows that do not fit (with row-level details); 409 for a key that exists already or
 * repeats within the rows under `fail`.
 *
 * A body of plain values goes straight in (direct_inserts.ts): under `fail` a body of many
 * parts by COPY while it arrives; once whole, a small one in one statement, a larger one under
 * `fail` by COPY; any other, or one those ways fail on, is staged.
 */
export async function insertRecords(
  context: StoreContext,
  ref: TableRef,
  rows: ArrivingRows,
  onConflict: OnConflict,
  keyed?: KeyedWrite<Inserted>,
): Promise<Inserted> {
  if (onConflict === "fail") {
    const early = await copyWhileArriving(context, ref, rows, keyed);
    if (early) return early;
  }
  const body = await arrived(rows);
  try {
    return await insert(context, ref, () => rows.whole(), onConflict, keyed, body);
  } catch (error) {
    if (!(error instanceof DirectRefused)) throw error;
    return await insert(context, ref, () => rows.whole(), onConflict, keyed);
  }
}

/**
 * Copies each part of a large body of plain values into the table while the next one
 * arrives, in one transaction and one `COPY`, so the load overlaps the upload. Any failure
 * (a value not plain, a row PostgreSQL refuses, a part late: see shared/arriving_parts.ts)
 * answers undefined, having changed nothing, and the whole body then takes the ordinary path,
 * which also explains failures with whole-body row numbers.
 */
async function copyWhileArriving(
  { database, descriptions }: StoreContext,
  ref: TableRef,
  rows: ArrivingRows,
  keyed: KeyedWrite<Inserted> | undefined,
): Promise<Inserted | undefined> {
  const arriving = await ArrivingParts.of(rows);
  if (!arriving) return undefined;
  let worked = false;
  try {
    return await keyedTransaction(database, keyed, async (session) => {
      const table = await lockedTable(session, descriptions, ref, "fail");
      const mapping = await plainMapping(table, arriving.sample);
      if (!mapping?.length) throw new Error("The rows are not plain");
      const insertions = await reservingInsertions(database, session, table, arriving.sample.rows);
      // Each part's rows have their insertion values before its lines are read. A part's count
      // of rows at its close takes in the row begun across its end, so the blocks never fall
      // short of the rows read; the last part's count is the body's.
      async function* paths(parts: AsyncIterable<RowsPart>) {
        for await (const part of parts) {
          await insertions?.reserveThrough(part.progress.rows);
          yield partFile(part);
        }
      }
      const counts = await copyRows(
        session,
        table,
        mapping,
        fileSlices(paths(arriving.parts())),
        () => arriving.summary().rows,
        insertions,
      );
      const result = await keepAnswer(session, keyed, { table, ...counts });
      worked = true;
      return result;
    });
  } catch (error) {
    // A COMMIT that failed may have committed (a connection lost on the way): the rows must
    // not go in again.
    if (worked) throw error;
    return undefined;
  }
}

/** A body that has arrived whole: what the pass learned of it, and its bytes. */
export interface ArrivedBody {
  readonly summary: RowsSummary;
  /** The bytes when the body stayed in memory. */
  readonly bytes?: Uint8Array;
  /** Otherwise the files of its parts, in order. */
  readonly parts: readonly string[];
}

/** Waits for the whole body: the ordinary path takes its lock only then (docs/api.md). */
export async function arrived(rows: ArrivingRows): Promise<ArrivedBody> {
  const small = await rows.inMemory();
  if (small) return { summary: small, bytes: small.bytes, parts: [] };
  const parts: string[] = [];
  let summary: RowsSummary | undefined;
  for await (const part of rows.parts()) {
    parts.push(partFile(part));
    summary = part.progress;
  }
  return { summary: summary!, parts };
}

/** The file of a part of the body: the spool keeps each in one. */
function partFile(part: RowsPart): string {
  if (part.localFile === undefined) throw new Error("A part of the body is not in a file");
  return part.localFile;
}

/** The body's bytes whole when it may go in one statement, else undefined. */
async function smallBytes(body: ArrivedBody): Promise<Uint8Array | undefined> {
  if (body.bytes) return body.bytes;
  if (body.summary.rows > DIRECT_ROWS) return undefined;
  let size = 0;
  for (const path of body.parts) size += (await Deno.stat(path)).size;
  if (size > DIRECT_BYTES) return undefined;
  const joined = new Uint8Array(size);
  let at = 0;
  for (const path of body.parts) {
    const bytes = await Deno.readFile(path);
    joined.set(bytes, at);
    at += bytes.length;
  }
  return joined;
}

/**
 * How `body` goes straight into `table`, when it may: in one statement when small (with
 * `commit`, committing the transaction in the same round trip), else by `COPY` (under `fail`
 * only); undefined when it is to be staged.
 */
async function straight(
  database: Database,
  table: Table,
  body: ArrivedBody,
  onConflict: OnConflict,
  commit: boolean,
): Promise<((session: Session) => Promise<LoadCounts>) | undefined> {
  const bytes = await smallBytes(body);
  if (bytes) {
    const direct = await directRows(table, body.summary, bytes);
    return direct && ((session) => insertDirect(session, table, direct, onConflict, commit));
  }
  if (onConflict !== "fail") return undefined;
  const mapping = await plainMapping(table, body.summary);
  if (!mapping) return undefined;
  return async (session) => {
    const rows = body.summary.rows;
    const insertions = mapping.length > 0
      ? await reservingInsertions(database, session, table, rows)
      : undefined;
    const lines = fileSlices(body.parts);
    return await copyRows(session, table, mapping, lines, () => rows, insertions);
  };
}

/** The direct insert failed: the transaction is rolled back, and the rows go the staging's way. */
class DirectRefused extends Error {}

/**
 * Inserts the rows in one transaction: `body` straight in when given and it may go so
 * (throwing {@link DirectRefused} when PostgreSQL refuses it), in one round trip when the
 * table's description is known and holds ({@link knownInsert}); otherwise `source()` through
 * the staging, read, checked and converted there, then copied in.
 */
export async function insert(
  context: StoreContext,
  ref: TableRef,
  source: () => Promise<RowsSource>,
  onConflict: OnConflict,
  keyed?: KeyedWrite<Inserted>,
  body?: ArrivedBody,
): Promise<Inserted> {
  const known = body?.bytes && !keyed
    ? await knownInsert(context, ref, body.bytes, body.summary, onConflict)
    : undefined;
  if (known) return known;
  const { database, staging, descriptions } = context;
  let refused = false;
  try {
    return await keyedTransaction(database, keyed, async (session) => {
      const table = await lockedTable(session, descriptions, ref, onConflict);
      // Without a key to keep an answer for, nothing follows the insert: it may commit.
      const straightIn = body && await straight(database, table, body, onConflict, !keyed);
      let counts: LoadCounts;
      if (straightIn) {
        try {
          counts = await straightIn(session);
        } catch (error) {
          refused = true;
          throw error;
        }
      } else {
        counts = await staging.withRows(await source(), async (held) => {
          const staged = await held.stage(table, onConflict);
          try {
            return await copyStaged(session, table, staged, onConflict);
          } finally {
            await Deno.remove(staged.path).catch(() => {});
          }
        });
      }
      return await keepAnswer(session, keyed, { table, ...counts });
    });
  } catch (error) {
    if (refused) throw new DirectRefused("PostgreSQL refused the direct insert", { cause: error });
    // Which rows clash is asked after the rollback, as on DuckDB.
    if (onConflict !== "fail" || !isKeyConflict(error)) throw error;
    throw await staging.withRows(
      await source(),
      (held) => explainKeyConflict(database, ref, held, error),
    );
  }
}

/** The locks an insert into `ref` holds. */
function insertLocks(ref: TableRef, onConflict: OnConflict): Batched {
  return lockStatement([
    schemaLock(ref.schema, "shared"),
    tableLock(ref, "shared"),
    ...(onConflict === "fail" ? [] : [upsertLock(ref)]),
  ])!;
}

/**
 * Takes the locks an insert into `ref` holds and describes the table, in one round trip with
 * the transaction's BEGIN; the description is remembered for the next insert.
 */
async function lockedTable(
  session: Session,
  descriptions: KnownDescriptions,
  ref: TableRef,
  onConflict: OnConflict,
) {
  const table = await descriptions.locked(session, ref, insertLocks(ref, onConflict));
  checkConflictKey(table, onConflict);
  return table;
}

/**
 * A small body of plain values inserted into the table as this process last described it:
 * the transaction's BEGIN, its locks, the check that the description holds, the INSERT and
 * the COMMIT in one round trip. Undefined, having changed nothing, when no description is
 * known, when it no longer holds (then forgotten) or when the body is not to go straight in.
 *
 * @throws {DirectRefused} when PostgreSQL refuses the insert, as {@link insert} does.
 */
async function knownInsert(
  { database, descriptions }: StoreContext,
  ref: TableRef,
  bytes: Uint8Array,
  summary: RowsSummary,
  onConflict: OnConflict,
): Promise<Inserted | undefined> {
  const known = descriptions.get(ref);
  // A refusal by a description that may be stale is left to the long way.
  if (!known || (onConflict !== "fail" && !conflictKey(known.table))) return undefined;
  const direct = await directRows(known.table, summary, bytes);
  if (!direct) return undefined;
  let refused = false;
  try {
    const counts = await descriptions.holding<LoadCounts>(
      ref,
      known,
      (work, opening) => database.transaction(work, opening),
      insertLocks(ref, onConflict),
      async (session) => {
        try {
          return await insertDirect(session, known.table, direct, onConflict, true);
        } catch (error) {
          refused = true;
          throw error;
        }
      },
    );
    return counts && { table: known.table, ...counts };
  } catch (error) {
    // A stale description is no error here (holding answers undefined); no connection to be
    // had (503) is the request's answer, not a refusal of its rows.
    if (refused) throw new DirectRefused("PostgreSQL refused the direct insert", { cause: error });
    throw error;
  }
}
