/**
 * Table definitions: from a request's definition to a checked plan the store can build.
 *
 * @module
 */

import { ApiError, type ErrorDetail, summarise } from "../errors.ts";
import type { TableDefinition, TableRef, TemplateRef } from "./model.ts";
import {
  DEFAULT_SCHEMA,
  labelProblem,
  MAX_NAME_LENGTH,
  nameKey,
  printable,
  RESERVED_SCHEMAS,
  sqlNameProblem,
} from "./names.ts";
import { type ParsedType, parseType, TypeSyntaxError } from "./types.ts";

/** Most columns a table may have on any engine; an engine may take fewer (`Store.maxColumns`). */
export const MAX_COLUMNS = 2000;
/** Longest default expression accepted. */
export const MAX_DEFAULT_LENGTH = 4096;

/** A column ready to be built. */
export interface PlannedColumn {
  readonly name: string;
  /** The type as requested, for messages. */
  readonly typeText: string;
  readonly type: ParsedType;
  /** Default expression text as requested; the store checks it is one scalar expression. */
  readonly default: string | null;
  readonly nullable: boolean;
}

/** A primary key or unique constraint with its final name. */
export interface PlannedKey {
  readonly name: string;
  readonly columns: readonly string[];
}

/** A foreign key with its final name and resolved reference schema. */
export interface PlannedForeignKey {
  readonly name: string;
  readonly column: string;
  readonly reference: TableRef;
  readonly referenceColumn: string;
}

/** A checked table definition. */
export interface TablePlan {
  readonly ref: TableRef;
  readonly columns: readonly PlannedColumn[];
  readonly primaryKey: PlannedKey | null;
  readonly unique: readonly PlannedKey[];
  readonly foreignKeys: readonly PlannedForeignKey[];
  /** The template version the definition came from, recorded with the table. */
  readonly template?: TemplateRef;
}

/**
 * Throws 422 when a table, or the rows or file a table would be made from, is wider than
 * `limit` ({@link MAX_COLUMNS} unless the engine takes fewer): checked before any work, as no
 * table could take it. `subject` begins the message ("Table \"t\" has"), `noun` counts what
 * it has.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkWidth } from "./definition.ts";
 *
 * assert.throws(() => checkWidth('Table "t" has', 2001), /2001 columns; at most 2000 columns/);
 * ```
 */
export function checkWidth(
  subject: string,
  count: number,
  noun = "columns",
  limit = MAX_COLUMNS,
): void {
  if (count > limit) {
    throw ApiError.unprocessable(
      `${subject} ${count} ${noun}; at most ${limit} columns are allowed`,
    );
  }
}

/** What an engine takes of a table, where it takes less than the contract allows. */
export interface EngineLimits {
  /** Most columns a table may have: at most the contract's {@link MAX_COLUMNS}. */
  readonly maxColumns: number;
  /**
   * Longest column name the engine keeps whole, in bytes of UTF-8: the contract's 63
   * characters may be longer.
   */
  readonly maxColumnNameBytes: number;
}

/**
 * Throws 422 when `plan` is more than the engine takes: more columns than its limit (as
 * {@link checkWidth}), or column names longer than it keeps.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkPlanLimits, planTable } from "./definition.ts";
 *
 * const plan = planTable({ schema: "public", name: "t" }, { columns: [{ name: "a", type: "int" }, { name: "é".repeat(40), type: "int" }] });
 * assert.throws(() => checkPlanLimits(plan, { maxColumns: 1, maxColumnNameBytes: 63 }), /Table "t" has 2 columns; at most 1 columns/);
 * assert.throws(() => checkPlanLimits(plan, { maxColumns: 2, maxColumnNameBytes: 63 }), /80 bytes of UTF-8; at most 63/);
 * ```
 */
export function checkPlanLimits(plan: TablePlan | undefined, limits: EngineLimits): void {
  if (!plan) return;
  checkWidth(`Table "${plan.ref.name}" has`, plan.columns.length, "columns", limits.maxColumns);
  const encoder = new TextEncoder();
  const problems: ErrorDetail[] = [];
  plan.columns.forEach((column, index) => {
    const bytes = encoder.encode(column.name).length;
    if (bytes <= limits.maxColumnNameBytes) return;
    problems.push({
      field: `columns[${index}].name`,
      column: column.name,
      message: `Column name "${column.name}" is ${bytes} bytes of UTF-8; at most ` +
        `${limits.maxColumnNameBytes} are allowed on this storage engine`,
    });
  });
  if (problems.length > 0) throw invalidDefinition(plan.ref.name, problems);
}

/**
 * Checks a table definition against the contract's rules and gives the plan to build it,
 * or throws a 422 listing every problem found; 422 at once past `maxColumns` columns (the
 * engine's limit, when the caller knows it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planTable } from "./definition.ts";
 *
 * const plan = planTable({ schema: "public", name: "users" }, {
 *   columns: [{ name: "id", type: "serial" }, { name: "email", type: "varchar" }],
 *   constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["email"] }] },
 * });
 * assert.equal(plan.primaryKey?.name, "users_pkey");
 * assert.equal(plan.unique[0]?.name, "users_email_key");
 * assert.equal(plan.columns[0]?.nullable, false);
 * ```
 */
export function planTable(
  ref: TableRef,
  definition: TableDefinition,
  maxColumns = MAX_COLUMNS,
): TablePlan {
  const problems: ErrorDetail[] = [];
  const specs = definition.columns ?? [];
  // Before anything is looked at per column: 10,000 columns are refused for their count.
  checkWidth(`Table "${ref.name}" has`, specs.length, "columns", maxColumns);

  const columns: PlannedColumn[] = [];
  const byKey = new Map<string, PlannedColumn>();
  specs.forEach((spec, index) => {
    const field = `columns[${index}]`;
    const nameProblem = labelProblem(spec.name);
    if (nameProblem) {
      problems.push({ field, message: `Column name "${printable(spec.name)}" ${nameProblem}` });
      return;
    }
    if (byKey.has(nameKey(spec.name))) {
      problems.push({
        field,
        column: spec.name,
        message: `Column "${spec.name}" appears more than once (names are case-insensitive)`,
      });
      return;
    }
    let type: ParsedType;
    try {
      type = parseType(spec.type.trim());
    } catch (error) {
      if (!(error instanceof TypeSyntaxError)) throw error;
      problems.push({
        field: `${field}.type`,
        column: spec.name,
        message: `Type "${printable(spec.type)}" of column "${spec.name}" ${error.message}`,
      });
      return;
    }
    const defaultText = spec.default ?? null;
    if (defaultText !== null) {
      const problem = defaultText.trim() === ""
        ? "is empty"
        : defaultText.length > MAX_DEFAULT_LENGTH
        ? `is longer than ${MAX_DEFAULT_LENGTH} characters`
        : type.serial
        ? "cannot be combined with a serial type, which has its own default"
        : undefined;
      if (problem) {
        problems.push({
          field: `${field}.default`,
          column: spec.name,
          message: `Default of column "${spec.name}" ${problem}`,
        });
        return;
      }
    }
    // PostgreSQL makes serial columns NOT NULL; an explicit is_nullable still wins.
    const nullable = spec.is_nullable ?? !type.serial;
    const column = { name: spec.name, typeText: spec.type, type, default: defaultText, nullable };
    columns.push(column);
    byKey.set(nameKey(spec.name), column);
  });

  const constraintNames = new Map<string, string>();
  // The first number each generated name may still be free with: names are never given
  // back, so each search starts where the last one for that name stopped.
  const nextNumber = new Map<string, number>();
  const claimName = (given: string | null | undefined, generated: string, field: string) => {
    let name = given ?? truncate(generated);
    // A generated name that collides gets a number, as PostgreSQL does; a chosen one is kept.
    if (given == null && constraintNames.has(nameKey(name))) {
      const base = [...truncate(generated)];
      let n = nextNumber.get(nameKey(generated)) ?? 1;
      do {
        const suffix = String(n++);
        name = `${base.slice(0, MAX_NAME_LENGTH - suffix.length).join("")}${suffix}`;
      } while (constraintNames.has(nameKey(name)));
      nextNumber.set(nameKey(generated), n);
    }
    const problem = labelProblem(name);
    if (problem) {
      problems.push({ field, message: `Constraint name "${printable(name)}" ${problem}` });
    } else if (constraintNames.has(nameKey(name))) {
      problems.push({ field, message: `Constraint name "${name}" is used more than once` });
    } else constraintNames.set(nameKey(name), field);
    return name;
  };
  const resolveColumns = (names: readonly string[], field: string): string[] | undefined => {
    if (names.length === 0) {
      problems.push({ field, message: "A key constraint needs at least one column" });
      return undefined;
    }
    const resolved: string[] = [];
    for (const name of names) {
      const column = byKey.get(nameKey(name));
      if (!column) {
        problems.push({
          field,
          column: name,
          message: `Constraint names unknown column "${printable(name)}"`,
        });
        return undefined;
      }
      if (resolved.some((r) => nameKey(r) === nameKey(name))) {
        problems.push({ field, column: name, message: `Column "${name}" is listed twice` });
        return undefined;
      }
      resolved.push(column.name);
    }
    return resolved;
  };

  const constraints = definition.constraints ?? {};
  let primaryKey: PlannedKey | null = null;
  if (constraints.primary_key) {
    const field = "constraints.primary_key";
    const keyColumns = resolveColumns(constraints.primary_key.columns, field);
    const name = claimName(constraints.primary_key.name, `${ref.name}_pkey`, field);
    if (keyColumns) primaryKey = { name, columns: keyColumns };
  }

  const unique: PlannedKey[] = [];
  const keySets = new Set(primaryKey ? [keySet(primaryKey.columns)] : []);
  (constraints.unique ?? []).forEach((spec, index) => {
    const field = `constraints.unique[${index}]`;
    const keyColumns = resolveColumns(spec.columns, field);
    const generated = `${ref.name}_${(keyColumns ?? spec.columns).join("_")}_key`;
    const name = claimName(spec.name, generated, field);
    if (!keyColumns) return;
    if (keySets.has(keySet(keyColumns))) {
      problems.push({ field, message: `Columns (${keyColumns.join(", ")}) already form a key` });
      return;
    }
    keySets.add(keySet(keyColumns));
    unique.push({ name, columns: keyColumns });
  });

  const foreignKeys: PlannedForeignKey[] = [];
  (constraints.foreign_keys ?? []).forEach((spec, index) => {
    const field = `constraints.foreign_keys[${index}]`;
    const column = byKey.get(nameKey(spec.column));
    const name = claimName(spec.name, `${ref.name}_${spec.column}_fkey`, field);
    if (!column) {
      problems.push({
        field,
        column: spec.column,
        message: `Foreign key "${name}" names unknown column "${printable(spec.column)}"`,
      });
      return;
    }
    const schema = spec.reference_schema ?? DEFAULT_SCHEMA;
    const badName = sqlNameProblem(schema) ??
      (RESERVED_SCHEMAS.has(nameKey(schema)) ? "is reserved" : undefined);
    if (badName) {
      problems.push({ field, message: `Reference schema "${printable(schema)}" ${badName}` });
      return;
    }
    const tableProblem = sqlNameProblem(spec.reference_table);
    if (tableProblem) {
      problems.push({
        field,
        message: `Reference table "${printable(spec.reference_table)}" ${tableProblem}`,
      });
      return;
    }
    const columnProblem = labelProblem(spec.reference_column);
    if (columnProblem) {
      problems.push({
        field,
        message: `Reference column "${printable(spec.reference_column)}" ${columnProblem}`,
      });
      return;
    }
    foreignKeys.push({
      name,
      column: column.name,
      reference: { schema, name: spec.reference_table },
      referenceColumn: spec.reference_column,
    });
  });

  if (problems.length > 0) throw invalidDefinition(ref.name, problems);
  return { ref, columns, primaryKey, unique, foreignKeys };
}

/** The 422 for a definition of `table` with `problems`. */
export function invalidDefinition(table: string, problems: readonly ErrorDetail[]): ApiError {
  return ApiError.unprocessable(
    `The definition of table "${table}" is invalid: ${summarise(problems)}`,
    problems,
  );
}

function keySet(columns: readonly string[]): string {
  return columns.map(nameKey).sort().join("\u0000");
}

function truncate(name: string): string {
  return [...name].slice(0, MAX_NAME_LENGTH).join("");
}
