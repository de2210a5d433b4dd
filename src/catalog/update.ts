/**
 * `PUT /table/{name}`: from the wanted table a request states to a checked plan of the
 * update, each wanted column tied to the existing column it continues.
 *
 * @module
 */

import { ApiError, type ErrorDetail, summarise } from "../errors.ts";
import { planTable, type TablePlan } from "./definition.ts";
import type { ColumnSpec, ConstraintsSpec, Table, TableRef } from "./model.ts";
import { checkSchemaName, checkTableName, DEFAULT_SCHEMA, nameKey, printable } from "./names.ts";

/** A wanted column: with `id` an existing column, without one a new column. */
export interface WantedColumn extends ColumnSpec {
  readonly id?: number | null;
}

/** The update request form of a table: every field optional, null meaning absent. */
export interface TableUpdateRequest {
  readonly name?: string | null;
  readonly schema?: string | null;
  readonly columns?: readonly WantedColumn[] | null;
  readonly constraints?: ConstraintsSpec | null;
}

/** A checked update: the wanted definition at its wanted address. */
export interface TableUpdate {
  /** The wanted table; `plan.ref` is where it will live. */
  readonly plan: TablePlan;
  /**
   * For each planned column, in order: the id of the existing column it continues, or
   * undefined for a column to add. Existing columns whose id is absent are dropped.
   */
  readonly sources: readonly (number | undefined)[];
}

/**
 * Checks an update request against the table as it is and gives the wanted table.
 * Omitted `columns` keep the columns; omitted `constraints` keep the constraints,
 * following column renames, less those whose columns are dropped (as PostgreSQL drops a
 * column's constraints with it). Sent constraints may name a kept column by its previous
 * name, so an edited GET response can be sent back; a name that is a wanted column's name
 * means that column. A foreign key naming the table's old name refers to the table itself.
 * A new column (no id) named as a column the update drops is refused, since it would
 * silently empty that column. Throws 400 for a bad name and 422 for every other problem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planUpdate } from "./update.ts";
 *
 * const current = {
 *   name: "users",
 *   schema: "public",
 *   columns: [
 *     { id: 1, name: "id", type: "INTEGER", default: null, is_nullable: false },
 *     { id: 2, name: "mail", type: "VARCHAR", default: null, is_nullable: true },
 *   ],
 *   constraints: {
 *     primary_key: { name: "users_pkey", columns: ["id"] },
 *     unique: [{ name: "users_mail_key", columns: ["mail"] }],
 *     foreign_keys: [],
 *   },
 * };
 * const update = planUpdate(current, {
 *   columns: [
 *     { id: 2, name: "email", type: "varchar" },
 *     { id: 1, name: "id", type: "bigint", is_nullable: false },
 *     { name: "age", type: "integer" },
 *   ],
 * });
 * assert.deepEqual(update.sources, [2, 1, undefined]);
 * assert.deepEqual(update.plan.unique[0], { name: "users_mail_key", columns: ["email"] });
 * assert.throws(() => planUpdate(current, { columns: [{ id: 9, name: "x", type: "int" }] }));
 * ```
 */
export function planUpdate(current: Table, request: TableUpdateRequest): TableUpdate {
  const target: TableRef = {
    schema: request.schema == null || nameKey(request.schema) === nameKey(current.schema)
      ? current.schema
      : checkSchemaName(request.schema),
    name: request.name == null ? current.name : checkTableName(request.name),
  };
  const { specs, sources } = request.columns == null
    ? keepColumns(current)
    : wantedColumns(current, request.columns);

  const constraints = request.constraints == null
    ? keptConstraints(current, target, specs, sources)
    : wantedConstraints(request.constraints, current, target, specs, sources);
  const plan = planTable(target, { columns: specs, constraints });

  const problems: ErrorDetail[] = [];
  plan.columns.forEach((column, index) => {
    if (column.type.serial && sources[index] !== undefined) {
      problems.push({
        field: `columns[${index}].type`,
        column: column.name,
        message: `Column "${column.name}" exists already and cannot become ${column.typeText}; ` +
          `serial types are for new columns`,
      });
    }
  });
  if (problems.length > 0) throw invalidUpdate(current, problems);
  return { plan, sources };
}

function keepColumns(current: Table): { specs: ColumnSpec[]; sources: number[] } {
  return {
    specs: current.columns.map((c) => ({
      name: c.name,
      type: c.type,
      default: c.default,
      is_nullable: c.is_nullable,
    })),
    sources: current.columns.map((c) => c.id),
  };
}

function wantedColumns(
  current: Table,
  wanted: readonly WantedColumn[],
): { specs: ColumnSpec[]; sources: (number | undefined)[] } {
  const problems: ErrorDetail[] = [];
  const known = new Set(current.columns.map((c) => c.id));
  const seen = new Map<number, number>();
  const sources = wanted.map((column, index) => {
    const id = column.id ?? undefined;
    if (id === undefined) return undefined;
    const field = `columns[${index}].id`;
    if (!known.has(id)) {
      problems.push({
        field,
        column: column.name,
        message: `Column id ${id} is not a column of table "${current.name}"`,
      });
    } else if (seen.has(id)) {
      problems.push({
        field,
        column: column.name,
        message: `Column id ${id} is given twice (columns[${seen.get(id)}] and columns[${index}])`,
      });
    } else seen.set(id, index);
    return id;
  });
  const dropped = new Map(
    current.columns.filter((c) => !seen.has(c.id)).map((c) => [nameKey(c.name), c]),
  );
  wanted.forEach((column, index) => {
    const replaced = column.id == null ? dropped.get(nameKey(column.name)) : undefined;
    if (replaced === undefined) return;
    problems.push({
      field: `columns[${index}].id`,
      column: column.name,
      message: `Column "${printable(column.name)}" has no id, so it would replace column ` +
        `"${replaced.name}" (id ${replaced.id}) and lose its values; send its id to keep it, ` +
        `or drop it and add the new column in two updates`,
    });
  });
  if (problems.length > 0) throw invalidUpdate(current, problems);
  const specs = wanted.map(({ name, type, default: defaultText, is_nullable }) => ({
    name,
    type,
    default: defaultText,
    is_nullable,
  }));
  return { specs, sources };
}

/** The current constraints, on the columns' wanted names, less those on dropped columns. */
function keptConstraints(
  current: Table,
  target: TableRef,
  specs: readonly ColumnSpec[],
  sources: readonly (number | undefined)[],
): ConstraintsSpec {
  const idOf = new Map(current.columns.map((c) => [c.name, c.id]));
  const wantedName = new Map<number, string>();
  sources.forEach((id, index) => {
    if (id !== undefined) wantedName.set(id, specs[index]!.name);
  });
  const rename = (names: readonly string[]): string[] | undefined => {
    const renamed = names.map((n) => wantedName.get(idOf.get(n) ?? -1));
    return renamed.every((n) => n !== undefined) ? renamed as string[] : undefined;
  };
  const { primary_key, unique, foreign_keys } = current.constraints;
  const primaryColumns = primary_key && rename(primary_key.columns);
  const keys = unique.flatMap((key) => {
    const columns = rename(key.columns);
    return columns ? [{ name: key.name, columns }] : [];
  });
  const foreignKeys = foreign_keys.flatMap((fk) => {
    const [column] = rename([fk.column]) ?? [];
    if (column === undefined) return [];
    if (!isSelf(fk, current)) return [{ ...fk, column }];
    const [referenced] = rename([fk.reference_column]) ?? [];
    if (referenced === undefined) return [];
    return [{
      ...fk,
      column,
      reference_table: target.name,
      reference_schema: target.schema,
      reference_column: referenced,
    }];
  });
  return {
    primary_key: primary_key && primaryColumns
      ? { name: primary_key.name, columns: primaryColumns }
      : null,
    unique: keys,
    foreign_keys: foreignKeys,
  };
}

/**
 * The sent constraints on the wanted columns. A column name no wanted column has but a kept
 * column had follows that column's rename; a wanted name comes first, so a request written
 * against the wanted table means what it says. References to the table's old address point
 * at its new one.
 */
function wantedConstraints(
  constraints: ConstraintsSpec,
  current: Table,
  target: TableRef,
  specs: readonly ColumnSpec[],
  sources: readonly (number | undefined)[],
): ConstraintsSpec {
  const wantedNames = new Set(specs.map((spec) => nameKey(spec.name)));
  const previousName = new Map(current.columns.map((c) => [c.id, nameKey(c.name)]));
  const previousNames = new Map<string, string>();
  sources.forEach((id, index) => {
    const previous = previousName.get(id ?? -1);
    if (previous !== undefined) previousNames.set(previous, specs[index]!.name);
  });
  const column = (name: string): string =>
    wantedNames.has(nameKey(name)) ? name : previousNames.get(nameKey(name)) ?? name;
  const columns = (names: readonly string[]): string[] => names.map(column);
  const { primary_key, unique, foreign_keys } = constraints;
  return {
    primary_key: primary_key && { ...primary_key, columns: columns(primary_key.columns) },
    unique: unique && unique.map((key) => ({ ...key, columns: columns(key.columns) })),
    foreign_keys: foreign_keys && foreign_keys.map((fk) =>
      isSelf(fk, current)
        ? {
          ...fk,
          column: column(fk.column),
          reference_table: target.name,
          reference_schema: target.schema,
          reference_column: column(fk.reference_column),
        }
        : isSelf(fk, target)
        ? { ...fk, column: column(fk.column), reference_column: column(fk.reference_column) }
        : { ...fk, column: column(fk.column) }
    ),
  };
}

function isSelf(
  fk: { readonly reference_table: string; readonly reference_schema?: string | null },
  table: TableRef,
): boolean {
  return nameKey(fk.reference_table) === nameKey(table.name) &&
    nameKey(fk.reference_schema ?? DEFAULT_SCHEMA) === nameKey(table.schema);
}

function invalidUpdate(current: Table, problems: readonly ErrorDetail[]): ApiError {
  return ApiError.unprocessable(
    `Cannot update table "${current.name}": ${summarise(problems)}`,
    problems,
  );
}
