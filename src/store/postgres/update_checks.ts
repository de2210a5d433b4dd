/**
 * Whether a table's existing rows allow an update on PostgreSQL, answered with the failing
 * rows as the DuckDB engine names them: their position in record order, column and value.
 * Each check runs inside the update's transaction, at the point of the update where the
 * columns already carry their new names (and, for the key and NOT NULL checks, new types).
 *
 * @module
 */

import { type ErrorDetail, MAX_DETAILS } from "../../errors.ts";
import type { Param, Session } from "./database.ts";
import { retypeSql } from "./retype.ts";
import { quoteIdent } from "./sql.ts";
import { failureDetails, type RowFailure } from "../shared/required_columns.ts";

/** The function that says whether one value converts by an expression, made once per session. */
const CASTABLE = "pg_temp.table_service_converts";

/**
 * The rows of column `column` (of table `table`, numbered in `order`) whose value does not
 * convert from type `from` to `type` (retype.ts): PostgreSQL 15 has no `pg_input_is_valid`,
 * so a temporary function tries each conversion in a subtransaction. Runs only after the
 * conversion itself failed.
 */
export async function castFailures(
  session: Session,
  table: string,
  order: string,
  column: string,
  from: string,
  type: string,
): Promise<ErrorDetail[]> {
  await session.run(
    `CREATE OR REPLACE FUNCTION ${CASTABLE}(v anyelement, conversion text) RETURNS boolean
     LANGUAGE plpgsql AS $$
     BEGIN
       EXECUTE 'SELECT ' || conversion USING v;
       RETURN true;
     EXCEPTION WHEN others THEN
       RETURN false;
     END $$`,
  );
  const name = quoteIdent(column);
  const rows = await session.rows(
    `SELECT row_, left(${name}::text, 80) AS value FROM (
       SELECT row_number() OVER (ORDER BY ${order}) - 1 AS row_, ${name} FROM ${table}) n
     WHERE ${name} IS NOT NULL AND NOT ${CASTABLE}(${name}, $1)
     ORDER BY row_ LIMIT ${MAX_DETAILS}`,
    [retypeSql("$1", from, type)],
  );
  return failureDetails(rows.map((r) => ({
    row: Number(r.row_),
    column,
    value: r.value as string,
    why: `cannot be cast to ${type}`,
  })));
}

/** A check of the rows: a query giving `row_`, `value`, and what it is about. */
export interface RowCheck {
  readonly column: string;
  readonly why: string;
  /** Over `numbered` (the rows with `row_`), the failing rows' `row_` and `value`. */
  readonly sql: string;
  readonly params?: readonly Param[];
}

/** The rows numbered in record order, for {@link RowCheck} queries to read as `numbered`. */
function numbered(table: string, order: string): string {
  return `(SELECT row_number() OVER (ORDER BY ${order}) - 1 AS row_, * FROM ${table}) numbered`;
}

/** A check that finds the nulls of a column to be NOT NULL. */
export function nullCheck(table: string, order: string, column: string): RowCheck {
  return {
    column,
    why: "is null, and the column is to be NOT NULL",
    sql: `SELECT row_, NULL::text AS value FROM ${numbered(table, order)}
      WHERE ${quoteIdent(column)} IS NULL`,
  };
}

/** A check that finds the rows repeating a new key's values. */
export function duplicateCheck(
  table: string,
  order: string,
  columns: readonly string[],
  what: string,
): RowCheck {
  const names = columns.map(quoteIdent);
  const value = names.length === 1 ? `left(${names[0]}::text, 80)` : "NULL::text";
  return {
    column: columns.join(", "),
    why: `repeats the ${what} of an earlier row`,
    sql: `SELECT row_, value FROM (
        SELECT row_, ${value} AS value,
          row_number() OVER (PARTITION BY ${names.join(", ")} ORDER BY row_) AS seen
        FROM ${numbered(table, order)}
        WHERE ${names.map((n) => `${n} IS NOT NULL`).join(" AND ")}) d
      WHERE seen > 1`,
  };
}

/** A check that finds the values of a new foreign key's column that `parent` lacks. */
export function orphanCheck(
  table: string,
  order: string,
  column: string,
  parent: { readonly table: string; readonly column: string },
  what: string,
): RowCheck {
  const name = quoteIdent(column);
  return {
    column,
    why: `has no match in ${what}`,
    sql: `SELECT row_, left(${name}::text, 80) AS value FROM ${numbered(table, order)}
      WHERE ${name} IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM ${parent.table} p WHERE p.${quoteIdent(parent.column)} = numbered.${name})`,
  };
}

/** The first failing rows of `checks`, in row then column order. */
export async function failingRows(
  session: Session,
  checks: readonly RowCheck[],
): Promise<ErrorDetail[]> {
  const failures: RowFailure[] = [];
  for (const check of checks) {
    const rows = await session.rows(
      `${check.sql} ORDER BY 1 LIMIT ${MAX_DETAILS}`,
      check.params ?? [],
    );
    for (const r of rows) {
      failures.push({
        row: Number(r.row_),
        column: check.column,
        value: r.value as string | null,
        why: check.why,
      });
    }
  }
  failures.sort((a, b) =>
    a.row - b.row || (a.column < b.column ? -1 : a.column > b.column ? 1 : 0)
  );
  return failureDetails(failures.slice(0, MAX_DETAILS));
}
