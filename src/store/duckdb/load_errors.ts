/**
 * Explaining a failed load: which rows and columns of a spooled file do not fit, as the
 * answer the client gets.
 *
 * @module
 */

import type { Column, Table } from "../../catalog/model.ts";
import type { KeyColumn } from "../../catalog/rows.ts";
import { ApiError, type ErrorDetail, MAX_DETAILS } from "../../errors.ts";
import type { Session } from "./database.ts";
import { aliases, MAX_ROW_BYTES, numbered } from "./rows.ts";
import type { RowsFile } from "./sources.ts";
import { DUPLICATE_KEY } from "./engine_errors.ts";
import { engineMessage, qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import { readAs } from "./values.ts";

/** How a file's values are read before they are cast: JSON for JSON rows, text for CSV. */
function rawType(file: RowsFile): string {
  return file.csv ? "VARCHAR" : "JSON";
}

/**
 * Explains why {@link loadRows} failed, as the answer the client gets: which rows and
 * columns, up to the contract's 100 details. Runs outside the failed transaction.
 */
export async function explainLoadFailure(
  session: Session,
  table: Table,
  file: RowsFile,
  mapping: readonly KeyColumn[],
  error: unknown,
  tableExists = true,
): Promise<ApiError> {
  if (error instanceof ApiError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const firstLine = message.split("\n")[0] ?? "";
  const record = /record\/value (\d+)/.exec(firstLine);
  const row = record ? Number(record[1]) - 1 : undefined;
  if (
    /Malformed JSON|unexpected (character|end|content)|invalid (literal|number|string)/i.test(
      firstLine,
    )
  ) {
    return ApiError.badRequest(
      `The request body is not valid JSON${row === undefined ? "" : ` in row ${row}`}`,
      row === undefined ? undefined : [{ row, message: "Malformed JSON" }],
    );
  }
  if (file.csv && !/Conversion Error|Could not convert|Constraint Error/i.test(firstLine)) {
    if (/CSV Error|columns|quote|Invalid Input Error|Invalid unicode/i.test(message)) {
      return ApiError.badRequest(`The CSV file is malformed: ${csvProblem(message)}`);
    }
  }
  // Rows the spool pass could not vouch for are read by DuckDB, which finds the repeat.
  const repeat = /in line (\d+): Object .* has duplicate key "(.*)"$/.exec(firstLine);
  if (repeat && !file.csv) {
    return ApiError.repeatedKey(Number(repeat[1]) - 1, repeat[2]!);
  }
  if (/maximum_object_size|exceeds the maximum/i.test(firstLine)) {
    return ApiError.badRequest(`A row is larger than ${MAX_ROW_BYTES} bytes`);
  }
  if (DUPLICATE_KEY.test(firstLine)) {
    const details = await conflictingRows(session, table, file, mapping, tableExists);
    return ApiError.conflict(
      `Rows conflict with a primary key or unique constraint of table "${table.name}"` +
        (details[0] ? `: ${details[0].message}` : ""),
      details,
    );
  }
  if (/foreign key/i.test(firstLine)) {
    return ApiError.invalidData(
      `Rows violate a foreign key of table "${table.name}": ${clean(firstLine)}`,
    );
  }
  const details = await badValues(session, file, mapping);
  if (details.length > 0) {
    return ApiError.invalidData(
      `Rows do not fit table "${table.name}": ${details[0]!.message}` +
        (details.length > 1 ? ` (and ${details.length - 1} more)` : ""),
      details,
    );
  }
  if (
    /Constraint Error|Conversion Error|Invalid Input Error|transform error|Could not convert/i.test(
      firstLine,
    )
  ) {
    return ApiError.invalidData(
      `Rows do not fit table "${table.name}": ${clean(firstLine)}`,
      row === undefined ? undefined : [{ row, message: clean(firstLine) }],
    );
  }
  throw error;
}

/** The gist of a CSV reader error: its line and what was wrong, without DuckDB's advice. */
export function csvProblem(message: string): string {
  const lines = message.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const where = lines.find((l) => /^CSV Error on Line/i.test(l.replace(/^[\w ]+Error: /, "")));
  const what = lines.find((l) =>
    /expected|unterminated|quote|invalid|columns/i.test(l) && !/^(CSV Error|Possible)/i.test(l) &&
    !/^\*/.test(l)
  );
  const text = [where?.replace(/^[\w ]+Error: /, ""), what].filter(Boolean).join(": ");
  return clean(text || (lines[0] ?? "unreadable"));
}

/** DuckDB's complaint without its category or the spool file's path. */
function clean(line: string): string {
  return engineMessage(new Error(line));
}

/** Rows whose values cannot be cast to their column, or are null in a NOT NULL column. */
export async function badValues(
  session: Session,
  file: RowsFile,
  mapping: readonly KeyColumn[],
): Promise<ErrorDetail[]> {
  if (mapping.length === 0) return [];
  const names = aliases(mapping);
  const checks: string[] = [];
  mapping.forEach((m, i) => {
    const a = names[i]!;
    const column = quoteLiteral(m.column.name);
    const failed = castFails(a, m.column, file);
    if (failed) {
      checks.push(
        `SELECT row_number_ - 1 AS row, ${column} AS col, 'Value ' || left(${a}::VARCHAR, 80) || ' is not a valid ${
          m.column.type.replaceAll("'", "")
        }' AS msg FROM src WHERE ${a} IS NOT NULL AND ${failed}`,
      );
    }
    if (!m.column.is_nullable) {
      checks.push(
        `SELECT row_number_ - 1 AS row, ${column} AS col, 'Column is NOT NULL but the value is null or missing' AS msg FROM src WHERE ${a} IS NULL`,
      );
    }
  });
  if (checks.length === 0) return [];
  const rows = await session.rows(
    `WITH src AS (SELECT * FROM ${numbered(file, mapping, () => rawType(file))})
     SELECT row, col, msg FROM (${
      checks.join(" UNION ALL ")
    }) ORDER BY row, col LIMIT ${MAX_DETAILS}`,
    [file.path],
  );
  return rows.map((r) => ({
    row: Number(r.row),
    column: r.col as string,
    message: r.msg as string,
  }));
}

/** A SQL condition true when the JSON value in `alias` does not fit `column`. */
function castFails(alias: string, column: Column, file: RowsFile): string | undefined {
  if (column.type === "VARCHAR" || column.type === "JSON") return undefined;
  const read = readAs(column.type);
  // A JSON value read as text is the string's own text (as read_json gives it), not JSON.
  const raw = read.type === "VARCHAR" && !file.csv
    ? `json_extract_string(${alias}, '$')`
    : `CAST(${alias} AS ${read.type})`;
  // try(CAST) rather than TRY_CAST: TRY_CAST of JSON to a LIST or STRUCT nulls only the
  // element that fails, so the row would pass this check and still fail the load.
  return `try(${read.expression(raw)}) IS NULL`;
}

/** Rows whose key repeats within the batch or already exists in the table. */
async function conflictingRows(
  session: Session,
  table: Table,
  file: RowsFile,
  mapping: readonly KeyColumn[],
  tableExists: boolean,
): Promise<ErrorDetail[]> {
  const keys = [
    ...(table.constraints.primary_key ? [table.constraints.primary_key] : []),
    ...table.constraints.unique,
  ];
  const names = aliases(mapping);
  const details: ErrorDetail[] = [];
  for (const key of keys) {
    const keyAliases = key.columns.map((k) => names[mapping.findIndex((m) => m.column.name === k)]);
    if (keyAliases.some((a) => a === undefined)) continue;
    const typed = numbered(file, mapping, (m) => readAs(m.column.type).type);
    const join = key.columns.map((k, i) => `t.${quoteIdent(k)} = src.${keyAliases[i]}`).join(
      " AND ",
    );
    const rows = await session.rows(
      `WITH src AS (SELECT * FROM ${typed})
       ${
        tableExists
          ? `SELECT row_number_ - 1 AS row, 'exists' AS why FROM src
         WHERE EXISTS (SELECT 1 FROM ${qualified(table.schema, table.name)} t WHERE ${join})
       UNION ALL`
          : ""
      }
       SELECT row_number_ - 1 AS row, 'repeats' AS why FROM src
         QUALIFY row_number() OVER (PARTITION BY ${keyAliases.join(", ")} ORDER BY row_number_) > 1
       ORDER BY 1 LIMIT ${MAX_DETAILS}`,
      [file.path],
    );
    for (const r of rows) {
      details.push({
        row: Number(r.row),
        column: key.columns.join(", "),
        message: r.why === "exists"
          ? `Key (${key.columns.join(", ")}) already exists (constraint "${key.name}")`
          : `Key (${
            key.columns.join(", ")
          }) repeats an earlier row of the batch (constraint "${key.name}")`,
      });
    }
  }
  return details.sort((a, b) => (a.row ?? 0) - (b.row ?? 0)).slice(0, MAX_DETAILS);
}
