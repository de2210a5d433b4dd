/**
 * Explaining a load that met a key conflict as the DuckDB store explains it: each row (by
 * its number in the request) whose key already exists in the table or repeats an earlier row
 * of the batch, per primary key and unique constraint, up to the contract's 100 details.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { ApiError, type ErrorDetail, MAX_DETAILS } from "../../errors.ts";
import type { StagingRows } from "../duckdb/mod.ts";
import type { Database } from "./database.ts";
import { describeTables } from "./metadata_describe.ts";
import { qualified, quoteIdent } from "./sql.ts";
import { existingTable } from "./tables.ts";

/** Whether `error` is the answer to rows that clash with a primary key or unique constraint. */
export function isKeyConflict(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status === 409 &&
    error.message.startsWith("Rows conflict with a primary key or unique constraint");
}

/**
 * The 409 for rows that clash with the keys of table `ref` (as it is now, in a transaction
 * of its own that changes nothing), naming each row; `error` itself when no row is found.
 */
export async function explainKeyConflict(
  database: Database,
  ref: TableRef,
  held: StagingRows,
  error: ApiError,
): Promise<ApiError> {
  const details = await database.transaction(async (session): Promise<ErrorDetail[]> => {
    // Temporary tables only: it changes nothing that outlives it.
    await session.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    const table = (await describeTables(session, [await existingTable(session, ref)]))[0]!;
    const found: ErrorDetail[] = [];
    for (const key of keysOf(table)) {
      const path = await held.keyRows(table, key.columns);
      if (path === undefined) continue;
      try {
        const temporary = quoteIdent(`_keys_${crypto.randomUUID().replaceAll("-", "")}`);
        const columns = key.columns.map((_, i) => `k${i}`);
        const types = key.columns.map((name) => table.columns.find((c) => c.name === name)!.type);
        await session.run(
          `CREATE TEMPORARY TABLE ${temporary} (row_ bigint, ${
            columns.map((c, i) => `${c} ${types[i]}`).join(", ")
          }) ON COMMIT DROP`,
        );
        const file = await Deno.open(path);
        await session.copyIn(`COPY ${temporary} FROM STDIN (FORMAT csv)`, file.readable);
        const join = key.columns.map((k, i) => `t.${quoteIdent(k)} = s.${columns[i]}`)
          .join(" AND ");
        const rows = await session.rows(
          `SELECT row_, 'exists' AS why FROM ${temporary} s
             WHERE EXISTS (SELECT 1 FROM ${qualified(table.schema, table.name)} t WHERE ${join})
           UNION ALL
           SELECT row_, 'repeats' FROM (SELECT row_, ${
            columns.join(" IS NULL OR ")
          } IS NULL AS open_,
             row_number() OVER (PARTITION BY ${columns.join(", ")} ORDER BY row_) AS n_
             FROM ${temporary}) r WHERE n_ > 1 AND NOT open_
           ORDER BY 1 LIMIT ${MAX_DETAILS}`,
        );
        const named = key.columns.join(", ");
        for (const r of rows) {
          found.push({
            row: Number(r.row_),
            column: named,
            message: r.why === "exists"
              ? `Key (${named}) already exists (constraint "${key.name}")`
              : `Key (${named}) repeats an earlier row of the batch (constraint "${key.name}")`,
          });
        }
      } finally {
        await Deno.remove(path).catch(() => {});
      }
    }
    return found.sort((a, b) => (a.row ?? 0) - (b.row ?? 0)).slice(0, MAX_DETAILS);
  }).catch(() => [] as ErrorDetail[]); // The table may have gone meanwhile: keep the answer.
  if (details.length === 0) return error;
  return ApiError.conflict(
    `Rows conflict with a primary key or unique constraint of table "${ref.name}": ${
      details[0]!.message
    }`,
    details,
  );
}

function keysOf(table: Table) {
  const { primary_key, unique } = table.constraints;
  return [...(primary_key ? [primary_key] : []), ...unique];
}
