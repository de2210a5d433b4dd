/**
 * Staged rows into a PostgreSQL table: one `COPY … FROM STDIN (FORMAT csv)` of the staged
 * CSV file, and for `skip` and `update` one `INSERT … SELECT … ON CONFLICT` from a temporary
 * table the file is copied into. The constraint errors PostgreSQL raises become the answers
 * the DuckDB store gives for the same rows.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import type { StagedRows } from "../duckdb/mod.ts";
import { conflictKey } from "../shared/conflict_key.ts";
import { drawsFromSequence } from "../shared/sql.ts";
import type { LoadCounts, OnConflict } from "../store.ts";
import type { Param, Session } from "./database.ts";
import { type EngineError, engineSaid, programLimit, VALUE_MISFITS } from "./engine_errors.ts";
import { qualified, quoteIdent } from "./sql.ts";

/**
 * Copies staged rows into `table` in the session's transaction, resolving key conflicts as
 * `onConflict` says, and counts them as the DuckDB store does: `skipped` and `updated` are
 * the rows sent that were not inserted. PostgreSQL fills the columns the rows lack (serials,
 * defaults). Constraint errors are thrown as the contract's answers ({@link loadFailure}).
 */
export async function copyStaged(
  session: Session,
  table: Table,
  staged: StagedRows,
  onConflict: OnConflict,
): Promise<LoadCounts> {
  try {
    const inserted = await insert(session, table, staged, onConflict);
    if (onConflict === "skip") return { inserted, skipped: staged.sent - inserted };
    if (onConflict === "update") return { inserted, updated: staged.sent - inserted };
    return { inserted };
  } catch (error) {
    throw loadFailure(table, error);
  }
}

async function insert(
  session: Session,
  table: Table,
  staged: StagedRows,
  onConflict: OnConflict,
): Promise<number> {
  if (staged.rows === 0) return 0;
  const target = qualified(table.schema, table.name);
  const columns = staged.columns.map(quoteIdent).join(", ");
  if (staged.columns.length === 0) {
    return await insertEmptyRows(session, table, staged.rows, onConflict);
  }
  if (onConflict === "fail") {
    return await session.copyIn(
      `COPY ${target} (${columns}) FROM STDIN (FORMAT csv)`,
      await fileStream(staged.path),
    );
  }
  const unique = crypto.randomUUID().replaceAll("-", "");
  const temporary = quoteIdent(`_load_${unique}`);
  // The rows' position in the file, numbered as COPY reads them: the INSERT takes them in
  // that order, so that serials and the insertion order follow the order they were sent.
  const position = quoteIdent(`_position_${unique}`);
  await session.run(
    `CREATE TEMPORARY TABLE ${temporary} ON COMMIT DROP AS SELECT ${columns} FROM ${target} WITH NO DATA`,
  );
  await session.run(
    `ALTER TABLE ${temporary} ADD COLUMN ${position} bigint GENERATED ALWAYS AS IDENTITY`,
  );
  await session.copyIn(
    `COPY ${temporary} (${columns}) FROM STDIN (FORMAT csv)`,
    await fileStream(staged.path),
  );
  const inserted = await insertResolving(session, table, {
    columns: staged.columns,
    source: temporary,
    position,
  }, onConflict);
  await session.run(`DROP TABLE ${temporary}`);
  return inserted;
}

/** Rows without keys: every column takes its default, once per row. */
export function insertEmptyRows(
  session: Session,
  table: Table,
  rows: number,
  onConflict: OnConflict,
): Promise<number> {
  return session.run(
    `INSERT INTO ${
      qualified(table.schema, table.name)
    } SELECT FROM generate_series(1, $1::bigint) ${onConflictClause(table, [], onConflict)}`,
    [rows],
  );
}

/** Rows to insert under `skip` or `update`: a relation of their columns and their position. */
export interface RowsRelation {
  /** The target's columns the rows give, by name. */
  readonly columns: readonly string[];
  /** A relation (a table, or a parenthesized SELECT with an alias) with those columns. */
  readonly source: string;
  /** Its column numbering the rows in the order they were sent, quoted. */
  readonly position: string;
  /** Parameters of `source`. */
  readonly params?: readonly Param[];
}

/**
 * Inserts `rows` into `table` resolving key conflicts as `onConflict` (`skip` or `update`)
 * says, in the order the rows were sent; answers how many rows were inserted.
 */
export async function insertResolving(
  session: Session,
  table: Table,
  rows: RowsRelation,
  onConflict: OnConflict,
): Promise<number> {
  const { source, position } = rows;
  const columns = rows.columns.map(quoteIdent).join(", ");
  // Of the rows of one key the first sent is kept under skip, the last under update (a row
  // may be updated once per statement), as if they were sent one by one; left out before the
  // insert, they draw no serial. Rows with a null in the key match none.
  const key = conflictKey(table)!;
  const keyed = key.every((k) => rows.columns.includes(k));
  const quoted = key.map(quoteIdent);
  const kept = onConflict === "skip" ? "min" : "max";
  const chosen = keyed
    ? `(SELECT * FROM (SELECT *, ${kept}(${position}) OVER (PARTITION BY ${quoted.join(", ")})
          AS kept_ FROM ${source}) AS w_
         WHERE ${quoted.map((k) => `${k} IS NULL`).join(" OR ")} OR ${position} = kept_) AS r_`
    : source;
  // xmax is 0 for a row this statement inserted, not for one it updated.
  const [row] = await session.rows(
    `WITH written AS (INSERT INTO ${qualified(table.schema, table.name)} (${columns})
       SELECT ${columns} FROM ${chosen} ORDER BY ${position}
       ${onConflictClause(table, rows.columns, onConflict)} RETURNING (xmax = 0) AS fresh)
     SELECT count(*) FILTER (WHERE fresh) AS inserted FROM written`,
    rows.params,
  );
  return Number(row!.inserted);
}

function onConflictClause(
  table: Table,
  columns: readonly string[],
  onConflict: OnConflict,
): string {
  if (onConflict === "fail") return "";
  if (onConflict === "skip") return "ON CONFLICT DO NOTHING";
  const key = conflictKey(table)!;
  const rest = columns.filter((c) => !key.includes(c));
  // A key the rows leave out takes its default: a serial's next value, which meets an
  // existing key at most once, and updates that row, as on DuckDB. A constant default would
  // give the rows one key, which PostgreSQL cannot update twice in one statement.
  const drawn = table.columns.every((c) =>
    !key.includes(c.name) || columns.includes(c.name) || drawsFromSequence(c)
  );
  return rest.length === 0 || !drawn
    ? "ON CONFLICT DO NOTHING"
    : `ON CONFLICT (${key.map(quoteIdent).join(", ")}) DO UPDATE SET ${
      rest.map((c) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`).join(", ")
    }`;
}

async function fileStream(path: string): Promise<ReadableStream<Uint8Array>> {
  return (await Deno.open(path)).readable;
}

/**
 * The answer for a load PostgreSQL refused, worded as the DuckDB store words it: 409 for a
 * key that already exists, 422 for a foreign key no row has, a null in a NOT NULL column, a
 * value the column cannot take or a row too big for a page; anything else as it is.
 */
export function loadFailure(table: Table, error: unknown): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  const { code, message, detail, constraint, column } = error as EngineError;
  const said = engineSaid(error as EngineError);
  switch (code) {
    case "23505": {
      const keys = [
        ...(table.constraints.primary_key ? [table.constraints.primary_key] : []),
        ...table.constraints.unique,
      ];
      const key = keys.find((k) => k.name === constraint);
      const columns = key?.columns.join(", ") ?? /^Key \((.*)\)=/.exec(detail ?? "")?.[1] ?? "";
      const what = `Key (${columns}) already exists (constraint "${key?.name ?? constraint}")`;
      return ApiError.conflict(
        `Rows conflict with a primary key or unique constraint of table "${table.name}": ${what}`,
        [{ column: columns, message: detail ? `${what}: ${detail}` : what }],
      );
    }
    case "23503":
      return ApiError.invalidData(`Rows violate a foreign key of table "${table.name}": ${said}`);
    case "23502":
      return ApiError.invalidData(
        `Rows do not fit table "${table.name}": ${said}`,
        column
          ? [{ column, message: "Column is NOT NULL but the value is null or missing" }]
          : undefined,
      );
    case "54000":
      return ApiError.invalidData(
        `Rows do not fit table "${table.name}": ${said}; ${programLimit(message)}`,
      );
  }
  // A load takes two more for rows that do not fit: 22023 invalid_parameter_value and
  // 22P05 untranslatable_character.
  if (code !== undefined && (VALUE_MISFITS.has(code) || code === "22023" || code === "22P05")) {
    return ApiError.invalidData(`Rows do not fit table "${table.name}": ${said}`);
  }
  return error;
}
