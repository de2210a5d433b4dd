/**
 * Records out of DuckDB tables: pages read as JSON, and exports (result_formats.ts) streamed
 * from one snapshot.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { describeIn, getTable } from "./tables.ts";
import { qualified, quoteIdent } from "./sql.ts";
import { jsonMembers, jsonObject } from "./values.ts";
import type { ResultFormat } from "../store.ts";
import { streamResult } from "./result_formats.ts";

/** The order records are read in: primary key order, else insertion order. */
export function recordOrder(table: Table): string {
  const pk = table.constraints.primary_key;
  return pk ? pk.columns.map(quoteIdent).join(", ") : "rowid";
}

/**
 * Columns of a page rendered by one statement. Each expression of a statement holds vectors
 * sized to the rows (up to 2,048), and DuckDB's optimizer (common_subexpressions) takes time
 * growing with the square of the expressions: a page of 100 rows of 2,000 columns ran out of
 * 256 MiB in one statement, and 3 rows of 2,000 BIGINT columns took 12.5 s; in slices of 100
 * columns, 1 s.
 */
const RENDER_SLICE = 100;

/**
 * Whether {@link readRecords} reads `table` in more than one statement, which must then
 * share a snapshot: a transaction around it.
 */
export function readsInSlices(table: Table): boolean {
  return table.columns.length > RENDER_SLICE;
}

/**
 * One page of records as a JSON array text, and the number of all records. For a table of
 * many columns ({@link readsInSlices}), call it in a transaction.
 */
export async function readRecords(
  session: Session,
  table: Table,
  offset: number,
  limit: number,
): Promise<{ json: string; total: number }> {
  for (const n of [offset, limit]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`Not a row count: ${n}`);
  }
  const target = qualified(table.schema, table.name);
  // The page is chosen on the stored values and only its rows are rendered: rendered in the
  // same SELECT as the ORDER BY, every row of the table would be turned into JSON first.
  // "record order" cannot clash with a column: column names have no spaces.
  const keyed = table.constraints.primary_key !== null;
  const order = recordOrder(table);
  const page = `SELECT *${
    keyed ? "" : `, rowid AS "record order"`
  } FROM ${target} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`;
  const pageOrder = keyed ? order : `"record order"`;
  if (readsInSlices(table)) {
    // Each row's members, a slice of columns at a time, in the caller's snapshot.
    const [counted] = await session.rows(`SELECT count(*) AS total FROM ${target}`);
    const members: string[] = [];
    for (let from = 0; from < table.columns.length; from += RENDER_SLICE) {
      const slice = table.columns.slice(from, from + RENDER_SLICE);
      const parts = await session.rows(
        `SELECT ${
          jsonMembers(slice, from === 0)
        } AS part FROM (${page}) AS page ORDER BY ${pageOrder}`,
      );
      parts.forEach((p, i) => members[i] = (members[i] ?? "") + (p.part as string));
    }
    return { json: `[${members.map((m) => `{${m}}`).join(",")}]`, total: Number(counted!.total) };
  }
  // One statement, so one snapshot without a transaction around it; the checked integers
  // are written into it because a statement without bound values is one call to DuckDB.
  const [row] = await session.rows(
    `SELECT (SELECT count(*) FROM ${target}) AS total,
       (SELECT string_agg(${
      jsonObject(table.columns)
    }, ',' ORDER BY ${pageOrder}) FROM (${page}) AS page) AS json`,
  );
  return { json: `[${row?.json ?? ""}]`, total: Number(row!.total) };
}

/** One page of records as JSON array text, and the count of all records. */
export async function readPage(
  context: StoreContext,
  ref: TableRef,
  offset: number,
  limit: number,
): Promise<{ json: string; total: number }> {
  const { database, descriptions } = context;
  const stamp = descriptions.stamp();
  const table = await getTable(context, ref);
  // A wide table is read in several statements: a transaction keeps them in one snapshot.
  const read =
    await (readsInSlices(table)
      ? database.transaction((session) => readRecords(session, table, offset, limit))
      : database.withSession((session) => readRecords(session, table, offset, limit)))
      .catch((error) => ({ error }));
  // No change was under way at any moment of the read, so none committed between the
  // description and the rows. Only the end of a change says it has committed: DuckDB may
  // answer a read that began after the commit before it answers the commit itself.
  if (descriptions.unchangedSince(stamp)) {
    if ("error" in read) throw read.error;
    return read;
  }
  // A definition changed meanwhile: read the table and its rows in one snapshot.
  const since = descriptions.stamp();
  return database.transaction(async (session) =>
    readRecords(session, await describeIn(context, session, ref, since), offset, limit)
  );
}

/**
 * The table's records in `format` (CSV header first), in record order, streamed from a
 * consistent snapshot.
 */
export async function exportRecords(
  context: StoreContext,
  ref: TableRef,
  format: ResultFormat,
): Promise<{ table: Table; stream: ReadableStream<Uint8Array> }> {
  // The table is described in the export's own snapshot: described before it, a rename,
  // retype or drop committed in between leaves the header stale and the statement naming
  // a column or table that is gone. A snapshot rather than the table's shared lock, which
  // would queue behind DDL that waits for a long load, and held while streaming would hold
  // DDL back for as long as the slowest client reads: DuckDB keeps the version the export
  // reads while DDL goes on and commits.
  const since = context.descriptions.stamp();
  let table: Table | undefined;
  const { stream } = await streamResult(context, format, async (session) => {
    table = await describeIn(context, session, ref, since);
    const sql = `SELECT * FROM ${qualified(table.schema, table.name)} ORDER BY ${
      recordOrder(table)
    }`;
    return { query: { sql }, columns: table.columns.map(({ name, type }) => ({ name, type })) };
  });
  return { table: table!, stream };
}
