/**
 * Rows into DuckDB tables: bulk loads of spooled JSON with `read_json` or CSV with
 * `read_csv`, and the INSERT statements behind them.
 *
 * @module
 */

import { conflictKey } from "../shared/conflict_key.ts";
import { drawsFromSequence } from "../shared/sql.ts";
import type { Column, Table } from "../../catalog/model.ts";
import type { KeyColumn } from "../../catalog/rows.ts";
import { ApiError } from "../../errors.ts";
import type { Session } from "./database.ts";
import { PLACEHOLDER_COLUMN } from "./metadata.ts";
import { qualified, quoteIdent, quoteLiteral } from "./sql.ts";
import { readAs } from "./values.ts";
import type { LoadCounts, OnConflict } from "../store.ts";
import type { RowsFile } from "./sources.ts";

/** A rows file as the loader needs it. */
type LoadedFile = Pick<RowsFile, "path" | "rows" | "csv">;

/**
 * Largest single row `read_json` accepts. DuckDB sizes its read buffers from it, so it
 * stays at DuckDB's own default: a larger one would cost memory on every load.
 */
export const MAX_ROW_BYTES = 16 * 1024 * 1024;

/**
 * The reader over a rows file (`$1`), its mapped keys read as `typeOf` says, under the
 * aliases of {@link sourceColumns}: `read_json` for JSON rows; for CSV a `read_csv`
 * subquery without blank lines, and with `numbered` each row's position as `row_number_`.
 */
function source(
  file: LoadedFile,
  mapping: readonly KeyColumn[],
  typeOf: (m: KeyColumn) => string,
  numbered = false,
): string {
  const names = sourceColumns(file, mapping);
  if (file.csv) {
    // Every column of the file is declared, in order; those no column takes are read as text.
    const types = file.csv.columns.map((key) => {
      const m = mapping.find((m) => m.key === key);
      return m ? typeOf(m) : "VARCHAR";
    });
    const columns = types.map((type, i) => `${quoteLiteral(names[i]!)}: ${quoteLiteral(type)}`);
    // Columns without a header, found empty: read, and left out.
    for (let i = 0; i < (file.csv.unnamed ?? 0); i++) columns.push(`'x${i}': 'VARCHAR'`);
    const projection = numbered ? [...names, "row_number_"] : names;
    const { delimiter, quote, escape, skip } = file.csv;
    const reader = `read_csv($1, header=true, auto_detect=false, ` +
      `delim=${quoteLiteral(delimiter)}, quote=${quoteLiteral(quote)}, ` +
      `escape=${quoteLiteral(escape)}, skip=${skip}, columns={${columns.join(", ")}})`;
    const ordinality = numbered ? ` WITH ORDINALITY AS f(${names.join(", ")}, row_number_)` : "";
    // A line of empty fields is no record, as an empty row of a sheet is none.
    const filter = file.csv.separatorLines === false
      ? ""
      : ` WHERE NOT (${names.map((n) => `${n} IS NULL`).join(" AND ")})`;
    return `(SELECT ${projection.join(", ")} FROM ${reader}${ordinality}${filter})`;
  }
  const columns = mapping.map((m) => `${quoteLiteral(m.key)}: ${quoteLiteral(typeOf(m))}`);
  return `read_json($1, format='newline_delimited', records=true, columns={${columns.join(", ")}})`;
}

/** Aliases for the mapped keys, so later clauses never quote a request's key. */
export function aliases(mapping: readonly KeyColumn[]): string[] {
  return mapping.map((_, i) => `k${i}`);
}

/** Every column of the source in order: the mapped keys' aliases, and for CSV the rest. */
function sourceColumns(file: LoadedFile, mapping: readonly KeyColumn[]): string[] {
  if (!file.csv) return aliases(mapping);
  return file.csv.columns.map((key, i) => {
    const m = mapping.findIndex((m) => m.key === key);
    return m >= 0 ? `k${m}` : `u${i}`;
  });
}

/**
 * The source with its columns under their aliases and each row's 1-based position in the
 * request as `row_number_`.
 */
export function numbered(
  file: LoadedFile,
  mapping: readonly KeyColumn[],
  typeOf: (m: KeyColumn) => string,
): string {
  const names = sourceColumns(file, mapping).join(", ");
  return file.csv
    ? `${source(file, mapping, typeOf, true)} AS src(${names}, row_number_)`
    : `${source(file, mapping, typeOf)} WITH ORDINALITY AS src(${names}, row_number_)`;
}

/**
 * Inserts the rows of a spooled file into `table` inside the caller's transaction. DuckDB
 * errors propagate unchanged; {@link explainLoadFailure} turns them into answers.
 */
export async function loadRows(
  session: Session,
  table: Table,
  file: LoadedFile,
  mapping: readonly KeyColumn[],
  onConflict: OnConflict,
): Promise<LoadCounts> {
  if (file.rows === 0) {
    return onConflict === "fail"
      ? { inserted: 0 }
      : { inserted: 0, [onConflict === "skip" ? "skipped" : "updated"]: 0 };
  }
  const target = qualified(table.schema, table.name);
  const before = await count(session, target);
  if (mapping.length === 0) {
    // Rows without keys: every column takes its default. SQL names at least one column, so
    // the first gets its own default spelled out (evaluated per row, like nextval).
    const first = table.columns[0];
    await session.run(
      `INSERT INTO ${target} (${quoteIdent(first?.name ?? PLACEHOLDER_COLUMN)})
       SELECT ${first?.default ?? "NULL"} FROM range($1::BIGINT) ${
        onConflict === "fail" ? "" : "ON CONFLICT DO NOTHING"
      }`,
      [file.rows],
    );
  } else if (onConflict !== "fail" && nullableKey(table, mapping)) {
    // DuckDB's ON CONFLICT takes rows whose key holds a null for one another within one
    // statement (of two such rows it keeps one), where a null matches nothing: those rows
    // go in by themselves, as no key of theirs can conflict.
    await session.run(insertStatement(table, file, mapping, onConflict, "null"), [file.path]);
    if (keyGiven(table, mapping)) {
      await session.run(insertStatement(table, file, mapping, onConflict, "given"), [file.path]);
    }
  } else {
    await session.run(insertStatement(table, file, mapping, onConflict), [file.path]);
  }
  const inserted = (await count(session, target)) - before;
  if (onConflict === "skip") return { inserted, skipped: file.rows - inserted };
  if (onConflict === "update") return { inserted, updated: file.rows - inserted };
  return { inserted };
}

/** Whether the rows give every column of the key conflicts are resolved on. */
function keyGiven(table: Table, mapping: readonly KeyColumn[]): boolean {
  return conflictKey(table)?.every((k) => mapping.some((m) => m.column.name === k)) ?? false;
}

/**
 * Whether the key conflicts are resolved on (the table's only unique constraint: a primary
 * key holds no null) may be null in some rows: the rows give every column of it and one is
 * nullable, or they leave out one whose default is null, which makes every row's key null.
 */
function nullableKey(table: Table, mapping: readonly KeyColumn[]): boolean {
  const key = conflictKey(table);
  if (!key || table.constraints.primary_key) return false;
  const columns = key.map((name) => table.columns.find((c) => c.name === name)!);
  const given = (c: Column) => mapping.some((m) => m.column.name === c.name);
  return keyGiven(table, mapping)
    ? columns.some((c) => c.is_nullable)
    : columns.some((c) => !given(c) && c.is_nullable && c.default === null);
}

/**
 * The INSERT of the rows of one spooled file (`$1`) into `table`, keys mapped to columns,
 * resolving key conflicts as `onConflict` says; with `part`, only the rows whose conflict
 * key holds a null (inserted as they are, as they conflict with nothing), or only the others.
 */
function insertStatement(
  table: Table,
  file: LoadedFile,
  mapping: readonly KeyColumn[],
  onConflict: OnConflict,
  part?: "null" | "given",
): string {
  const names = aliases(mapping);
  const typeOf = (m: KeyColumn) => readAs(m.column.type).type;
  const columnList = mapping.map((m) => quoteIdent(m.column.name));
  const values = mapping.map((m, i) => readAs(m.column.type).expression(names[i]!));
  /** The source when it keeps one row per key (as `numbered` gives it, filtered). */
  let deduped: string | undefined;
  let conflict = "";
  const key = conflictKey(table);
  const keyAliases = key?.map((k) => names[mapping.findIndex((m) => m.column.name === k)]) ?? [];
  const keyed = keyAliases.length > 0 && keyAliases.every((a) => a !== undefined);
  // With `part`, rows are sorted by whether their key holds a null (keyAliases are the rows'
  // own columns when keyed; a key column they leave out is null in every row).
  const nulls = (keyAliases as string[]).map((a) => `${a} IS NULL`).join(" OR ");
  const only = part === "null"
    ? `WHERE ${keyed ? nulls : "TRUE"}`
    : part
    ? `WHERE NOT (${nulls})`
    : "";
  if (part === "null") {
    deduped = `${numbered(file, mapping, typeOf)} ${only}`;
  } else if (onConflict === "skip") {
    conflict = "ON CONFLICT DO NOTHING";
    if (keyed) {
      // Within one batch the first row of a key wins, the later ones are skipped.
      deduped = dedupe(file, mapping, keyAliases as string[], "ASC", only);
    }
  }
  if (onConflict === "update" && part !== "null") {
    if (!key) throw noConflictKey(table);
    const rest = mapping.filter((m) => !key.includes(m.column.name));
    if (keyed) {
      // Within one batch the last row of a key wins, as if the rows were sent one by one.
      deduped = dedupe(file, mapping, keyAliases as string[], "DESC", only);
    }
    conflict = rest.length === 0
      ? "ON CONFLICT DO NOTHING"
      : `ON CONFLICT (${key.map(quoteIdent).join(", ")}) DO UPDATE SET ` +
        rest.map((m) => `${quoteIdent(m.column.name)} = excluded.${quoteIdent(m.column.name)}`)
          .join(", ");
  }
  const target = qualified(table.schema, table.name);
  const drawn = table.columns.filter((c) =>
    drawsFromSequence(c) && !mapping.some((m) => m.column.name === c.name)
  );
  if (drawn.length === 0) {
    const from = deduped ??
      `${source(file, mapping, typeOf)} AS src(${sourceColumns(file, mapping).join(", ")})`;
    // Every column in the table's order needs no list: DuckDB plans a list as one more step,
    // with a vector of 2,048 values for each column, 64 MiB for 2,000 text columns.
    const whole = mapping.length === table.columns.length &&
      mapping.every((m, i) => m.column.name === table.columns[i]!.name);
    return `INSERT INTO ${target} ${whole ? "" : `(${columnList.join(", ")}) `}SELECT ${
      values.join(", ")
    } FROM ${from} ${conflict}`;
  }
  // DuckDB evaluates a default, and any expression, on several threads at once, a chunk of
  // rows each, so the values a sequence gives out follow no order (in a batch of 5,000 rows
  // the last 904 drew 2049–2952). Drawn in any order, they are sorted and handed to the
  // rows in the order they were sent; the ORDER BY keeps that order in the table too,
  // except under ON CONFLICT, whose insert DuckDB does not keep in order (nor without one).
  const draws = drawn.map((c, i) => `${c.default} AS d${i}_`);
  const joins = drawn.map((_, i) =>
    `JOIN (SELECT d${i}_ AS v, row_number() OVER (ORDER BY d${i}_) AS p_ FROM rows_) d${i} USING (p_)`
  );
  // Positions are the rows' numbers, counted again where rows were left out.
  const dense = deduped === undefined && !file.csv;
  const position = dense ? "row_number_" : "row_number() OVER (ORDER BY row_number_)";
  return `INSERT INTO ${target} (${
    [...columnList, ...drawn.map((c) => quoteIdent(c.name))].join(", ")
  })
    WITH kept_ AS (SELECT * FROM ${deduped ?? numbered(file, mapping, typeOf)}),
      rows_ AS MATERIALIZED (SELECT *, ${position} AS p_, ${draws.join(", ")} FROM kept_)
    SELECT ${[...values, ...drawn.map((_, i) => `d${i}.v`)].join(", ")}
    FROM rows_ ${joins.join(" ")} ORDER BY p_ ${conflict}`;
}

/**
 * Inserts the rows of a spooled file (JSON, or CSV as `file.csv` lays it out) into `table`
 * inside the caller's transaction, failing on any key conflict; `mapping` must not be empty.
 * Returns how many rows it inserted.
 */
export function insertRows(
  session: Session,
  table: Table,
  file: LoadedFile,
  mapping: readonly KeyColumn[],
): Promise<number> {
  return session.changes(insertStatement(table, file, mapping, "fail"), [file.path]);
}

/**
 * Appends the rows of spooled files to `table` as they arrive, inside the caller's
 * transaction, failing on any key conflict; `mapping` must not be empty. Returns the count.
 */
export async function appendParts(
  session: Session,
  table: Table,
  paths: AsyncIterable<string>,
  mapping: readonly KeyColumn[],
): Promise<number> {
  let inserted = 0;
  for await (const path of paths) {
    inserted += await insertRows(session, table, { path, rows: -1 }, mapping);
  }
  return inserted;
}

/**
 * The source keeping one row per key: the first (ASC) or the last (DESC) in the batch, of
 * the rows `where` (a WHERE clause, or "") lets through.
 */
function dedupe(
  file: LoadedFile,
  mapping: readonly KeyColumn[],
  keyAliases: readonly string[],
  order: "ASC" | "DESC",
  where = "",
): string {
  return `${numbered(file, mapping, (m) => readAs(m.column.type).type)} ${where} ` +
    `QUALIFY ${keyAliases.map((a) => `${a} IS NULL`).join(" OR ")} OR ` +
    `row_number() OVER (PARTITION BY ${keyAliases.join(", ")} ORDER BY row_number_ ${order}) = 1`;
}

function noConflictKey(table: Table): ApiError {
  return ApiError.invalidData(
    `Table "${table.name}" has no primary key and not exactly one unique constraint, ` +
      `so rows cannot be matched for on_conflict`,
  );
}

async function count(session: Session, target: string): Promise<number> {
  const rows = await session.rows(`SELECT count(*) AS n FROM ${target}`);
  return Number(rows[0]!.n);
}
