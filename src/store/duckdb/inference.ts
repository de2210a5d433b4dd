/**
 * Inferring a table's plan from rows alone, and checking a plan against an existing table.
 *
 * @module
 */

import { checkWidth, MAX_COLUMNS, planTable, type TablePlan } from "../../catalog/definition.ts";
import type { Table, TableDefinition, TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { checkSameColumns as checkSame } from "../shared/same_columns.ts";
import type { Session } from "./database.ts";
import { describeCsv } from "./csv_layout.ts";
import { otherKeys } from "./row_keys.ts";
import { engineMessage } from "./sql.ts";
import type { RowsFile } from "./sources.ts";

/**
 * A plan for a table made from rows alone: the keys name the columns, in order of first
 * appearance, and DuckDB's JSON reader infers their types (from a sample, or every row).
 */
export async function inferPlan(
  session: Session,
  ref: TableRef,
  file: RowsFile,
  fromAll: boolean,
  maxColumns = MAX_COLUMNS,
): Promise<TablePlan> {
  if (file.form === "arrays") {
    throw ApiError.unprocessable(
      `Rows given as arrays need a table definition to name their columns; send "table" or use objects`,
    );
  }
  if (file.csv) {
    const { types } = await describeCsv(session, file.path, fromAll);
    return planTable(ref, {
      columns: file.csv.columns.map((name, i) => ({ name, type: types[i] ?? "VARCHAR" })),
    });
  }
  if (file.rows === 0) {
    // No values to infer from: keys known without rows (a sheet's header) become text.
    return planTable(ref, { columns: file.keys.map((name) => ({ name, type: "VARCHAR" })) });
  }
  if (file.keys.length === 0) return planTable(ref, { columns: [] });
  checkWidth(`Table "${ref.name}" has`, file.keys.length, "columns", maxColumns);
  // Keys past the spool pass's sample: counted (a distinct list, little memory) before DuckDB
  // infers a type for each, which for 10,000 keys takes more than its memory limit.
  if (!file.keysComplete) {
    file = { ...file, keys: [...file.keys, ...await otherKeys(session, file)], keysComplete: true };
    checkWidth(`Table "${ref.name}" has`, file.keys.length, "columns", maxColumns);
  }
  const sample = fromAll ? ", sample_size=-1" : "";
  const describe = (options: string) =>
    session.rows(
      `DESCRIBE SELECT * FROM read_json($1, format='newline_delimited', records=true${options}${sample})`,
      [file.path],
    );
  let described;
  try {
    described = await describe("").catch((error) => {
      // DuckDB takes rows of over 200 keys, or of keys each in under a tenth of the rows, for
      // one MAP, which records=true refuses. Then every key is a column; nested objects are
      // STRUCTs too, where elsewhere DuckDB may choose a MAP for them.
      if (!/expected records/i.test(String(error))) throw error;
      return describe(", map_inference_threshold=-1");
    });
  } catch (error) {
    if (error instanceof ApiError) throw error; // out of memory: 503, not the rows' fault
    const line = engineMessage(error);
    if (/malformed|unexpected/i.test(line)) {
      throw ApiError.badRequest("The request body is not valid JSON");
    }
    throw ApiError.invalidData(
      `Cannot infer column types from the rows: ${line.replace(/ in file "[^"]*"/g, "")}`,
    );
  }
  const types = new Map(described.map((r) => [r.column_name as string, r.column_type as string]));
  if (!fromAll && file.keys.some((k) => !types.has(k))) {
    return inferPlan(session, ref, file, true, maxColumns);
  }
  const definition: TableDefinition = {
    columns: file.keys.map((key) => {
      const type = types.get(key) ?? "JSON";
      return { name: key, type: type === "NULL" ? "JSON" : type };
    }),
  };
  return planTable(ref, definition);
}

/** 422 unless `plan` has the same columns (names and types) as the existing table. */
export function checkSameColumns(session: Session, table: Table, plan: TablePlan): Promise<void> {
  return checkSame(table, plan, async (column) => {
    const [row] = await session.rows(`SELECT typeof(CAST(NULL AS ${column.type.sql})) AS t`);
    return row!.t as string;
  });
}

/** Rows used keys the spool pass did not sample; the load is redone knowing all of them. */
export class MoreKeys extends Error {
  constructor(readonly keys: readonly string[]) {
    super(`Rows use ${keys.length} more keys`);
  }

  /** The file's summary with every key. */
  complete(file: RowsFile): RowsFile {
    return { ...file, keys: [...file.keys, ...this.keys], keysComplete: true };
  }
}
