/**
 * A PostgreSQL-protocol transaction on DuckDB (store.ts's `WireSession`): one pooled
 * connection in one transaction, so its statements read one snapshot; each query checked by
 * the guard of `POST /query` (queries.ts), then streamed with each value rendered as
 * PostgreSQL's text (wire_values.ts), under the query's deadline.
 *
 * @module
 */

import type {
  DuckDBBlobVector,
  DuckDBConnection,
  DuckDBPreparedStatement,
  DuckDBResult,
  DuckDBType,
  DuckDBValue,
} from "@duckdb/node-api";
import type { QueryRequest, WireColumn, WireRows, WireSession } from "../store.ts";
import { Lru } from "../../lru.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { interruptAfter } from "./interrupts.ts";
import {
  boundParams,
  check,
  keepColumns,
  knownQuery,
  queryCatalog,
  queryFailure,
} from "./queries.ts";
import { describeResult } from "./result_formats.ts";
import { dataRowValues, preparedColumns, wireColumns, wireMessages } from "./wire_values.ts";
import { catalogDatabase } from "./wire_catalog.ts";
import { type CatalogSnapshot, isCatalogQuery } from "../shared/wire_catalog.ts";

/** A connection held in one transaction until {@link WireSession.end}. */
export async function openWireSession(
  context: StoreContext,
  single: boolean,
  snapshot: (request: QueryRequest) => Promise<CatalogSnapshot>,
): Promise<WireSession> {
  const catalog = async (request: QueryRequest) => await catalogDatabase(await snapshot(request));
  const given = Promise.withResolvers<Session>();
  const done = Promise.withResolvers<void>();
  // One statement is one snapshot by itself: no BEGIN and COMMIT around it, two round trips
  // to DuckDB's threads fewer.
  const hold = single
    ? context.database.withSession.bind(context.database)
    : context.database.transaction.bind(context.database);
  const whole = hold(async (session) => {
    given.resolve(session);
    await done.promise;
  });
  whole.catch(() => {});
  const session = await Promise.race([
    given.promise,
    whole.then(() => given.promise),
  ]);
  const { connection } = session;
  let ended = false;
  /** The rows read past a batch's end, and whether the result is read out. */
  const checkedSql = async (request: QueryRequest) => {
    const catalog = await queryCatalog(context);
    return (await check(session, request, catalog)).sql;
  };
  const underDeadline = async <T>(request: QueryRequest, work: () => Promise<T>) => {
    const deadline = interruptAfter(connection, request.timeoutMs);
    try {
      return await work();
    } catch (error) {
      throw deadline.error() ?? queryFailure(error, request);
    } finally {
      deadline.clear();
    }
  };
  const wire: WireSession = {
    describe: async (request) =>
      isCatalogQuery(request.sql)
        ? await (await catalog(request)).describe(request)
        : await underDeadline(request, async () => {
          const sql = await checkedSql(request);
          const prepared = await connection.prepare(sql);
          try {
            const named = preparedColumns(prepared);
            const params: string[] = [];
            for (let i = 1; i <= prepared.parameterCount; i++) {
              try {
                const t = prepared.parameterType(i);
                params.push(t.alias ?? String(t));
              } catch {
                params.push("VARCHAR");
              }
            }
            const paramOids = wireColumns(params.map((type) => ({ name: "", type })))
              .map((c) => c.oid);
            return { columns: wireColumns(named), params: paramOids };
          } finally {
            prepared.destroySync();
          }
        }),
    check: async (request) => {
      // DuckDB's binder (tables, columns, types) comes with the description, as PostgreSQL's
      // analysis comes with Parse. The emulated catalog's own database says what it cannot
      // answer when it runs.
      if (!isCatalogQuery(request.sql)) await wire.describe(request);
    },
    open: async (request) =>
      isCatalogQuery(request.sql)
        ? await (await catalog(request)).open(request)
        : await underDeadline(request, async (): Promise<WireRows> => {
          const { values, types } = boundParams(request.params);
          const stream = (sql: string, columns: readonly WireColumn[]) =>
            streamPrepared(connection, wireMessages(sql, columns), values, types);
          const stamp = context.descriptions.stamp();
          const catalog = await queryCatalog(context);
          // A statement alone reads the current catalogue, so the columns kept for its query
          // (queries.ts) are its own while no change of a definition begins or ends: then
          // its rows need no description first.
          const known = single ? knownQuery(context, request, catalog, stamp) : undefined;
          let columns = known && wireColumns(known.columns);
          let result: DuckDBResult | undefined;
          try {
            result = columns && await stream(known!.sql, columns);
          } catch (error) {
            // Bound against a catalogue changed since, the kept columns' statement may not
            // bind at all: then it runs again as any other.
            if (context.descriptions.unchangedSince(stamp)) throw error;
          }
          if (!context.descriptions.unchangedSince(stamp)) columns = undefined;
          if (!columns) {
            const { sql } = await check(session, request, catalog);
            const described = await describeResult(session, { sql, values, types });
            if (single) keepColumns(context, request, catalog, described, stamp);
            columns = wireColumns(described);
            result = await stream(sql, columns);
          }
          const rows: WireColumn[] = columns;
          const read: DuckDBResult = result!;
          let pending: Uint8Array[] = [];
          let finished = false;
          const messages = (count: number) =>
            underDeadline(request, async () => {
              while (pending.length < count && !finished) {
                const chunk = await read.fetchChunk();
                if (!chunk || chunk.rowCount === 0) finished = true;
                else {
                  const vector = chunk.getColumnVector(0) as DuckDBBlobVector;
                  for (const message of blobBytes(vector, chunk.rowCount)) pending.push(message);
                }
              }
              const batch = pending.length <= count ? pending : pending.slice(0, count);
              pending = pending.length <= count ? [] : pending.slice(count);
              return batch;
            });
          return {
            columns: rows,
            nextDataRows: messages,
            next: async (count) => (await messages(count)).map(dataRowValues),
            close() {
              pending = [];
              finished = true;
              return Promise.resolve();
            },
          };
        }),
    cancel() {
      connection.interrupt();
    },
    async end() {
      if (ended) return;
      ended = true;
      done.resolve();
      await whole.catch(() => {});
    },
  };
  return wire;
}

/**
 * The bytes of the first `count` BLOBs of `vector`, copied into one buffer. The bindings'
 * `getItemBytes` makes a native call for each BLOB longer than 12 bytes, about a second for
 * a million rows; here each is read through Deno's pointer view of its `string_t` (a 4-byte
 * length, then the bytes inline up to 12, else a 4-byte prefix and their address), which the
 * pinned bindings keep in the vector's `dataView` ({@link stringsOf}). Without that view, or
 * when an item is NULL, `getItemBytes`.
 */
export function blobBytes(vector: DuckDBBlobVector, count: number): Uint8Array[] {
  const view = stringsOf(vector);
  // A NULL's string_t holds no address: its bytes are read the bindings' way, as none.
  const valid = (vector as unknown as { validity?: { itemValid?(i: number): boolean } }).validity;
  let nulls = typeof valid?.itemValid !== "function";
  for (let i = 0; i < count && !nulls; i++) nulls = !valid!.itemValid!(i);
  if (!view || view.byteLength < count * 16 || nulls) {
    return Array.from({ length: count }, (_, i) => vector.getItemBytes(i) ?? new Uint8Array());
  }
  let total = 0;
  for (let i = 0; i < count; i++) total += view.getUint32(i * 16, true);
  const bytes = new Uint8Array(total);
  const items: Uint8Array[] = [];
  for (let i = 0, at = 0; i < count; i++) {
    const length = view.getUint32(i * 16, true);
    const item = bytes.subarray(at, at + length);
    if (length <= 12) item.set(new Uint8Array(view.buffer, view.byteOffset + i * 16 + 4, length));
    else {
      const address = Deno.UnsafePointer.create(view.getBigUint64(i * 16 + 8, true));
      if (address === null) throw new Error("A BLOB of DuckDB's has no address");
      new Deno.UnsafePointerView(address).copyInto(item);
    }
    items.push(item);
    at += length;
  }
  return items;
}

/** The `string_t`s of a BLOB vector, as the pinned bindings keep them, if they do. */
export function stringsOf(vector: DuckDBBlobVector): DataView | undefined {
  const view = (vector as unknown as { dataView?: unknown }).dataView;
  return view instanceof DataView ? view : undefined;
}

/** Most statements of rows {@link streamPrepared} keeps prepared on one connection. */
const MOST_PREPARED = 32;

/** The statements of rows prepared on each connection, by text, the least used first. */
const preparedOn = new WeakMap<DuckDBConnection, Lru<string, DuckDBPreparedStatement>>();

/**
 * The rows of `sql` with `values` bound, streamed from a statement prepared on `connection`
 * once: planning the statement that builds the protocol's messages takes longer than running
 * it for a small result. DuckDB binds a prepared statement again when the catalogue changed
 * since (a column retyped, a table made anew); the text holds the columns' types it expects,
 * and different columns are a different text.
 */
async function streamPrepared(
  connection: DuckDBConnection,
  sql: string,
  values: DuckDBValue[],
  types: DuckDBType[],
): Promise<DuckDBResult> {
  let kept = preparedOn.get(connection);
  if (!kept) preparedOn.set(connection, kept = new Lru(MOST_PREPARED));
  let prepared = kept.get(sql);
  if (!prepared) {
    prepared = await connection.prepare(sql);
    kept.set(sql, prepared)?.[1].destroySync();
  }
  // A statement kept from another session's query holds its values until bound anew.
  prepared.clearBindings();
  prepared.bind(values, types);
  return await prepared.stream();
}
