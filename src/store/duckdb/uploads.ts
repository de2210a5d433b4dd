/**
 * Uploads: creating, replacing or appending to a table from a file of rows, JSON or CSV,
 * with the columns inferred from the rows when no definition is given.
 *
 * @module
 */

import type { PlannedColumn } from "../../catalog/definition.ts";
import type { Table, TableRef } from "../../catalog/model.ts";
import type { KeyColumn } from "../../catalog/rows.ts";
import { ApiError } from "../../errors.ts";
import type { CsvSource, RowsSource, UploadOptions, UploadResult } from "../store.ts";
import { DryRun, outcomeOf, PREVIEW_ROWS } from "../shared/dry_runs.ts";
import { readPage } from "./record_reads.ts";
import { dropTableIn, existingSchema } from "./catalog_rows.ts";
import { checkpointAfterLoad, noted, type StoreContext } from "./context.ts";
import { csvRowsFile } from "./csv_layout.ts";
import { buildTable, checkColumns } from "./ddl.ts";
import { described } from "./descriptions.ts";
import { keepAnswer } from "./idempotency.ts";
import { checkSameColumns, inferPlan, MoreKeys } from "./inference.ts";
import { loadChecked } from "./inserts.ts";
import { explainLoadFailure } from "./load_errors.ts";
import { findTable } from "./metadata.ts";
import { describeTables } from "./metadata_describe.ts";
import { mapRowKeys } from "./row_keys.ts";
import { type RowsFile, withLocalFile } from "./sources.ts";
import { heldBy, schemaLock, tableLock } from "./store_locks.ts";

/**
 * Creates (or replaces, or appends to) a table from `rows`, in one transaction; without a
 * plan the columns are inferred from the rows. A load of many rows is followed by a
 * checkpoint.
 */
export async function uploadTable(
  context: StoreContext,
  ref: TableRef,
  rows: RowsSource,
  options: UploadOptions,
): Promise<UploadResult> {
  noted(context, options.keyed);
  const loaded = await withLocalFile(
    context.spoolDir,
    rows,
    (path) => uploadInferring(context, ref, { ...rows, path }, options),
  );
  if (!options.dryRun) await checkpointAfterLoad(context, loaded.inserted);
  return loaded;
}

/**
 * {@link uploadTable} from a CSV file, read by DuckDB's CSV reader: delimiter, quoting and,
 * without a plan, the columns' types detected; the first line is the header.
 */
export async function uploadCsv(
  context: StoreContext,
  ref: TableRef,
  source: CsvSource,
  options: UploadOptions,
): Promise<UploadResult> {
  const loaded = await withLocalFile(context.spoolDir, source, async (path) => {
    const file = await context.database.withSession((session) =>
      csvRowsFile(session, path, source)
    );
    noted(context, options.keyed);
    return await uploadInferring(context, ref, file, options);
  });
  if (!options.dryRun) await checkpointAfterLoad(context, loaded.inserted);
  return loaded;
}

/**
 * An upload tried again when it meets keys past the spool's sample, and, when the columns
 * were inferred from a sample, once more with types inferred from every row.
 */
async function uploadInferring(
  context: StoreContext,
  ref: TableRef,
  file: RowsFile,
  options: UploadOptions,
): Promise<UploadResult> {
  try {
    try {
      return await upload(context, ref, file, options, false);
    } catch (error) {
      if (!(error instanceof MoreKeys)) throw error;
      file = error.complete(file);
      return await upload(context, ref, file, options, false);
    }
  } catch (error) {
    // Types inferred from a sample can miss a later row; infer from every row and retry.
    if (
      options.plan || !(error instanceof ApiError) || error.status !== 422 ||
      error.type !== "invalid_data"
    ) {
      throw error;
    }
    return await upload(context, ref, file, options, true);
  }
}

function upload(
  context: StoreContext,
  ref: TableRef,
  file: RowsFile,
  options: UploadOptions,
  inferFromAll: boolean,
): Promise<UploadResult> {
  const { database } = context;
  const locks = [schemaLock(ref.schema, "shared"), tableLock(ref, "exclusive")];
  return outcomeOf(() =>
    context.locks.run(
      locks,
      async () => {
        const existing = await database.withSession(async (session) => {
          const schema = await existingSchema(session, ref.schema);
          return { schema, row: await findTable(session, { schema, name: ref.name }) };
        });
        const at = { schema: existing.schema, name: existing.row?.name ?? ref.name };
        if (existing.row && options.ifExists === "fail") {
          throw ApiError.conflict(
            `Table "${at.schema}.${at.name}" already exists; use if_exists=replace or append`,
          );
        }
        const appending = existing.row !== undefined && options.ifExists === "append";
        let plan = options.plan;
        let defaults = new Map<PlannedColumn, string>();
        if (!appending) {
          plan ??= await database.withSession((session) =>
            inferPlan(session, at, file, inferFromAll)
          );
          const checked = plan;
          defaults = await database.withSession((session) => checkColumns(session, checked));
        }
        let table: Table | undefined;
        let mapping: readonly KeyColumn[] = [];
        // Appending changes no definition; creating or replacing does.
        type Upload = () => Promise<UploadResult>;
        const load = appending
          ? (work: Upload) => work()
          : (work: Upload) =>
            context.descriptions.changing(work, {
              affects: heldBy(locks),
              leaves: (result) => [described(result.table)],
            });
        try {
          return await load(() =>
            database.transaction(async (session) => {
              if (appending) {
                table = (await describeTables(session, [existing.row!]))[0]!;
                if (plan) await checkSameColumns(session, table, plan);
              } else {
                if (existing.row) await dropTableIn(session, existing.row);
                table = await buildTable(session, at, plan!, defaults);
              }
              mapping = await mapRowKeys(database, table, file);
              const { inserted } = await loadChecked(
                context,
                session,
                table,
                file,
                mapping,
                "fail",
              );
              if (options.dryRun) {
                const { json } = await readPage(session, table, 0, PREVIEW_ROWS);
                throw new DryRun({ table, inserted, preview: json });
              }
              return await keepAnswer(session, options.keyed, { table, inserted });
            })
          );
        } catch (error) {
          if (
            !table || error instanceof MoreKeys || error instanceof ApiError ||
            error instanceof DryRun
          ) throw error;
          const described = table;
          // A table this upload created was rolled back with it: there are no rows to clash with.
          throw await database.withSession((session) =>
            explainLoadFailure(session, described, file, mapping, error, appending)
          );
        }
      },
    )
  );
}
