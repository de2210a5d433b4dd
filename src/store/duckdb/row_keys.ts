/**
 * Finding the keys rows use: keys outside those known, the columns keys fill, a key's first row.
 *
 * @module
 */

import { listValue } from "@duckdb/node-api";
import type { Table } from "../../catalog/model.ts";
import { type KeyColumn, matchRowKeys, rowsDoNotFit } from "../../catalog/rows.ts";
import type { Database, Session } from "./database.ts";
import { badValues } from "./load_errors.ts";
import type { RowsFile } from "./sources.ts";

/** Keys of any row that are not among the keys already known for `file`. */
export function keysOutside(database: Database, file: RowsFile): Promise<string[]> {
  return database.withSession((session) => otherKeys(session, file));
}

/** {@link keysOutside} on `session`. */
export async function otherKeys(session: Session, file: RowsFile): Promise<string[]> {
  // A key no JSON object can have keeps the list non-empty, which DuckDB needs to bind it.
  const known = listValue(["\u0000", ...file.keys]);
  const rows = await session.rows(
    `SELECT DISTINCT k FROM (SELECT unnest(json_keys(json)) AS k
       FROM read_json_objects($1, format='newline_delimited'))
     WHERE NOT list_contains($2, k)`,
    [file.path, known],
  );
  return rows.map((r) => r.k as string);
}

/**
 * The columns the rows' keys fill; 422 when a key fits no column, naming those keys
 * together with every bad value of the keys that do fit.
 */
export async function mapRowKeys(
  database: Database,
  table: Table,
  file: RowsFile,
): Promise<KeyColumn[]> {
  const { mapping, problems } = await matchRowKeys(
    table,
    file,
    (key) => firstRowOfKey(database, file, key),
  );
  if (problems.length === 0) return mapping;
  const values = await database.withSession((session) => badValues(session, file, mapping));
  throw rowsDoNotFit(table, [...problems, ...values]);
}

/** The first row (0-based) whose object has `key`; for messages about that key. */
export function firstRowOfKey(
  database: Database,
  file: RowsFile,
  key: string,
): Promise<number | undefined> {
  // A CSV file's keys are its header, not any row's.
  if (file.csv) return Promise.resolve(undefined);
  return database.withSession(async (session) => {
    const rows = await session.rows(
      `SELECT o - 1 AS row FROM read_json_objects($1, format='newline_delimited') WITH ORDINALITY AS s(j, o)
       WHERE list_contains(json_keys(j), $2) LIMIT 1`,
      [file.path, key],
    );
    return rows[0] ? Number(rows[0].row) : undefined;
  });
}
