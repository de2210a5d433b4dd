/**
 * Records out of DuckDB tables: pages read as JSON, and the queries and header of a CSV
 * export.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import type { Session } from "./database.ts";
import { qualified, quoteIdent } from "./sql.ts";
import { csvLine, jsonMembers, jsonObject } from "./values.ts";

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

/** The query giving one CSV line per record, in record order. */
export function csvQuery(table: Table): string {
  return `SELECT ${csvLine(table.columns)} AS line FROM ${
    qualified(table.schema, table.name)
  } ORDER BY ${recordOrder(table)}`;
}

/**
 * The CSV header line for `table`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { csvHeader } from "./record_reads.ts";
 *
 * const columns = [{ name: "id" }, { name: 'say "hi"' }, { name: "a,b" }];
 * assert.equal(csvHeader(columns), 'id,"say ""hi""","a,b"');
 * ```
 */
export function csvHeader(columns: readonly { name: string }[]): string {
  return columns.map((c) =>
    /[",\r\n]|^\s|\s$/.test(c.name) ? `"${c.name.replaceAll('"', '""')}"` : c.name
  ).join(",");
}
