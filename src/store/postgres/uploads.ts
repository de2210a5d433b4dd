/**
 * Uploads on PostgreSQL: creating, replacing or appending to a table from JSON rows or a CSV
 * file, with the columns inferred from the rows (by the DuckDB staging) when no definition is
 * given. One transaction: a failed upload leaves no table, or the old one as it was.
 *
 * @module
 */

import {
  checkPlanLimits,
  checkWidth,
  planTable,
  type TablePlan,
} from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import { parseType } from "../../catalog/types.ts";
import { ApiError } from "../../errors.ts";
import type { InferredColumn, StagingRows } from "../duckdb/mod.ts";
import type { CsvSource, RowsSource, UploadOptions, UploadResult } from "../store.ts";
import { DryRun, outcomeOf, PREVIEW_ROWS } from "../shared/dry_runs.ts";
import { ALL_RECORDS } from "../shared/record_pages.ts";
import { readPage } from "./record_reads.ts";
import { checkSameColumns as checkSame } from "../shared/same_columns.ts";
import type { StoreContext } from "./context.ts";
import { probing } from "./database.ts";
import { buildTable, checkColumns, PG_MAX_COLUMNS, PG_MAX_NAME_BYTES } from "./ddl.ts";
import { copyStaged } from "./copy_rows.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { explainKeyConflict, isKeyConflict } from "./key_conflicts.ts";
import { schemaLock, tableLock, takeLocks } from "./locks.ts";
import { findTable } from "./metadata.ts";
import { describeTables } from "./metadata_describe.ts";
import { existingSchema } from "./metadata.ts";
import { dropTableIn } from "./tables.ts";
import { postgresType } from "./types.ts";

/** Creates (or replaces, or appends to) a table from JSON rows, in one transaction. */
export function uploadTable(
  context: StoreContext,
  ref: TableRef,
  rows: RowsSource,
  options: UploadOptions,
): Promise<UploadResult> {
  return context.staging.withRows(rows, (held) => uploadInferring(context, ref, held, options));
}

/** {@link uploadTable} from a CSV file: delimiter, quoting and, without a plan, types sniffed. */
export function uploadCsv(
  context: StoreContext,
  ref: TableRef,
  csv: CsvSource,
  options: UploadOptions,
): Promise<UploadResult> {
  return context.staging.withCsv(csv, (held) => uploadInferring(context, ref, held, options));
}

/** An upload tried once more, with types inferred from every row, when a sample's types fail. */
async function uploadInferring(
  context: StoreContext,
  ref: TableRef,
  held: StagingRows,
  options: UploadOptions,
): Promise<UploadResult> {
  try {
    return await upload(context, ref, held, options, false);
  } catch (error) {
    if (options.ifExists === "append" && isKeyConflict(error)) {
      throw await explainKeyConflict(context.database, ref, held, error);
    }
    if (
      options.plan || !(error instanceof ApiError) || error.status !== 422 ||
      error.type !== "invalid_data"
    ) {
      throw error;
    }
    return await upload(context, ref, held, options, true);
  }
}

function upload(
  { database }: StoreContext,
  ref: TableRef,
  held: StagingRows,
  options: UploadOptions,
  inferFromAll: boolean,
): Promise<UploadResult> {
  return outcomeOf(() =>
    keyedTransaction(database, options.keyed, async (session) => {
      await takeLocks(session, [schemaLock(ref.schema, "shared"), tableLock(ref, "exclusive")]);
      const schema = await existingSchema(session, ref.schema);
      const existing = await findTable(session, { schema, name: ref.name });
      const at = { schema, name: existing?.name ?? ref.name };
      if (existing && options.ifExists === "fail") {
        throw ApiError.conflict(
          `Table "${at.schema}.${at.name}" already exists; use if_exists=replace or append`,
        );
      }
      let table: Table;
      if (existing && options.ifExists === "append") {
        table = (await describeTables(session, [existing]))[0]!;
        if (options.plan) await checkSameColumns(table, options.plan);
      } else {
        const plan = options.plan ?? inferredPlan(at, await held.infer(at, inferFromAll));
        // Its probes may fail, which would abort this transaction: each in a savepoint.
        const checked = await checkColumns(probing(session), plan);
        // The old table goes first, so the new one takes its name and its sequences' names;
        // readers wait for the commit and then see the new table, never none.
        if (existing) await dropTableIn(session, existing);
        table = await buildTable(session, at, plan, checked);
      }
      const staged = await held.stage(table, "fail");
      try {
        const { inserted } = await copyStaged(session, table, staged, "fail");
        if (options.dryRun) {
          const { json } = await readPage(session, table, 0, PREVIEW_ROWS, { read: ALL_RECORDS });
          throw new DryRun({ table, inserted, preview: json });
        }
        return await keepAnswer(session, options.keyed, { table, inserted });
      } finally {
        await Deno.remove(staged.path).catch(() => {});
      }
    })
  );
}

/**
 * A plan from inferred columns: each type as PostgreSQL takes it, and where it takes none
 * (DuckDB infers STRUCTs for objects, nested lists, 128-bit integers) the nearest it has.
 */
function inferredPlan(ref: TableRef, columns: readonly InferredColumn[]): TablePlan {
  checkWidth(`Table "${ref.name}" has`, columns.length, "columns", PG_MAX_COLUMNS);
  const plan = planTable(ref, {
    columns: columns.map(({ name, type }) => {
      if (typeof postgresType(parseType(type)) === "string") return { name, type };
      if (/^U?(HUGEINT|BIGINT)$/.test(type)) return { name, type: "numeric" };
      if (type === "TIMESTAMP_NS") return { name, type: "timestamp" };
      return { name, type: "json" };
    }),
  });
  checkPlanLimits(plan, { maxColumns: PG_MAX_COLUMNS, maxColumnNameBytes: PG_MAX_NAME_BYTES });
  return plan;
}

/** 422 unless `plan` has the same columns (names and PostgreSQL types) as the table. */
function checkSameColumns(table: Table, plan: TablePlan): Promise<void> {
  return checkSame(table, plan, (column) => {
    const type = postgresType(column.type);
    return typeof type === "string" ? type : column.type.sql;
  }, unboundedText);
}

/**
 * `text` named as `character varying` without a length, which holds the same values: a table
 * inferred from rows has `character varying` columns, and a definition saying `text` (or
 * `string`) for them is the same definition, as it is on DuckDB.
 */
function unboundedText(type: string): string {
  return type.replace(/^text((?:\[\])*)$/, "character varying$1");
}
