/**
 * Checks that a table's existing rows allow an update: retype casts, NOT NULL, keys, foreign keys.
 *
 * @module
 */

import type { PlannedKey } from "../../catalog/definition.ts";
import { nameKey } from "../../catalog/names.ts";
import { ApiError, type ErrorDetail, MAX_DETAILS, summarise } from "../../errors.ts";
import { failureDetails, refuseRequiredColumns } from "../shared/required_columns.ts";
import type { Session } from "./database.ts";
import { recordOrder } from "./record_reads.ts";
import { qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import type { ColumnChange, UpdateAnalysis } from "./update_analysis.ts";
import { retypeValue } from "./values.ts";

/**
 * Checks that the rows allow the update: values cast to new types, no nulls where NOT NULL
 * is wanted, no duplicates for a new key (409), no orphans for a new foreign key. Reads
 * only; details name the first failing rows by their position in record order.
 */
export async function checkRows(session: Session, analysis: UpdateAnalysis): Promise<void> {
  const { current, plan, columns } = analysis;
  const table = qualified(current.schema, current.name);
  const order = recordOrder(current);
  // Every check reads the rows numbered once, in record order.
  const numbered = `SELECT row_number() OVER (ORDER BY ${order}) - 1 AS row_, * FROM ${table}`;
  const valueOf = (change: ColumnChange) =>
    change.retyped
      ? `try(${retypeValue(quoteIdent(change.source!.name), change.source!.type, change.type)})`
      : quoteIdent(change.source!.name);
  const byName = new Map(columns.map((c) => [nameKey(c.planned.name), c]));

  const invalid: string[] = [];
  for (const change of columns) {
    const name = quoteLiteral(change.planned.name);
    if (change.source && change.retyped) {
      const source = quoteIdent(change.source.name);
      invalid.push(
        `SELECT row_, ${name} AS col, left(${source}::VARCHAR, 80) AS value,
           'cannot be cast to ${change.type.replaceAll("'", "")}' AS why
         FROM numbered WHERE ${source} IS NOT NULL AND ${valueOf(change)} IS NULL`,
      );
    }
    if (change.source && change.notNull && change.source.is_nullable) {
      invalid.push(
        `SELECT row_, ${name} AS col, NULL AS value, 'is null, and the column is to be NOT NULL' AS why
         FROM numbered WHERE ${quoteIdent(change.source.name)} IS NULL`,
      );
    }
  }
  const conflicts: string[] = [];
  const keys: { key: PlannedKey; kind: string }[] = [
    ...(plan.primaryKey ? [{ key: plan.primaryKey, kind: "primary key" }] : []),
    ...plan.unique.map((key) => ({ key, kind: "unique constraint" })),
  ];
  for (const { key, kind } of keys) {
    const parts = key.columns.map((c) => byName.get(nameKey(c))!);
    // New columns hold their defaults; the copy itself refuses duplicates among those.
    if (parts.some((p) => !p.source)) continue;
    const values = parts.map(valueOf);
    conflicts.push(
      `SELECT row_, ${quoteLiteral(key.columns.join(", "))} AS col, ${
        values.length === 1 ? `left(${values[0]}::VARCHAR, 80)` : "NULL"
      } AS value, 'repeats the ${kind} "${key.name.replaceAll("'", "''")}" of an earlier row' AS why
       FROM numbered WHERE ${values.map((v) => `${v} IS NOT NULL`).join(" AND ")}
       QUALIFY row_number() OVER (PARTITION BY ${values.join(", ")} ORDER BY row_) > 1`,
    );
  }
  for (const fk of analysis.foreignKeys) {
    const change = byName.get(nameKey(fk.column))!;
    if (!change.source) continue;
    let parent: string;
    if (fk.table.id === undefined) {
      const referenced = byName.get(nameKey(fk.refColumn))!;
      if (!referenced.source) continue;
      parent = `SELECT ${valueOf(referenced)} AS v FROM ${table}`;
    } else {
      parent = `SELECT ${quoteIdent(fk.refColumn)} AS v FROM ${
        qualified(fk.table.schema, fk.table.name)
      }`;
    }
    const value = valueOf(change);
    invalid.push(
      `SELECT row_, ${
        quoteLiteral(change.planned.name)
      } AS col, left(${value}::VARCHAR, 80) AS value,
         'has no match in ${
        quoteLiteral(`${fk.table.name}.${fk.refColumn}`).slice(1, -1)
      } (foreign key "${fk.name.replaceAll("'", "''")}")' AS why
       FROM numbered WHERE ${value} IS NOT NULL
         AND ${value} NOT IN (SELECT v FROM (${parent}) WHERE v IS NOT NULL)`,
    );
  }

  await refuseRequiredColumns(current.name, columns, async () => {
    const [{ n }] = await session.rows(`SELECT count(*) AS n FROM ${table}`) as [{ n: bigint }];
    return n;
  });
  const invalidRows = await failingRows(session, numbered, invalid);
  if (invalidRows.length > 0) {
    throw ApiError.invalidData(
      `Cannot update table "${current.name}": ${summarise(invalidRows)}`,
      invalidRows,
    );
  }
  const conflictRows = await failingRows(session, numbered, conflicts);
  if (conflictRows.length > 0) {
    throw ApiError.conflict(
      `Cannot update table "${current.name}": ${conflictRows[0]!.message}`,
      conflictRows,
    );
  }
}

/**
 * Runs detail queries (row, column, value, why) over the rows `numbered` gives, and gives
 * the first failing rows in order.
 */
async function failingRows(
  session: Session,
  numbered: string,
  queries: readonly string[],
): Promise<ErrorDetail[]> {
  if (queries.length === 0) return [];
  const rows = await session.rows(
    `WITH numbered AS MATERIALIZED (${numbered})
     SELECT * FROM (${queries.join(" UNION ALL ")}) ORDER BY 1, 2 LIMIT ${MAX_DETAILS}`,
  );
  return failureDetails(rows.map((r) => ({
    row: Number(r.row_),
    column: r.col as string,
    value: r.value as string | null,
    why: r.why as string,
  })));
}
