/**
 * The CREATE TABLE statement of a table's shape, alike on both engines but for the one hidden
 * column each may add.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { qualified, quoteIdent } from "./sql.ts";

/** A table's shape as a CREATE TABLE statement needs it; every name is quoted here. */
export interface TableShapeSql {
  readonly columns: readonly {
    readonly name: string;
    /** A type in the engine's own spelling. */
    readonly typeSql: string;
    /** A default as the engine renders it, after its check, or a sequence's. */
    readonly defaultSql?: string | null;
    readonly nullable: boolean;
  }[];
  readonly primaryKey?: readonly string[] | null;
  readonly unique: readonly (readonly string[])[];
  readonly foreignKeys: readonly {
    readonly column: string;
    readonly table: TableRef;
    readonly refColumn: string;
  }[];
}

/**
 * The CREATE TABLE statement for a shape; `hidden`, when given, is the definition of a column
 * the engine adds after the shape's own. Constraints go unnamed: the names users chose live in
 * the metadata.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createTableSql } from "./table_ddl.ts";
 *
 * const sql = createTableSql({ schema: "public", name: "T" }, {
 *   columns: [{ name: "id", typeSql: "integer", nullable: false }],
 *   primaryKey: ["id"],
 *   unique: [],
 *   foreignKeys: [{ column: "id", table: { schema: "public", name: "u" }, refColumn: "k" }],
 * }, '"hidden" BOOLEAN');
 * assert.equal(
 *   sql,
 *   'CREATE TABLE "public"."T" ("id" integer NOT NULL, "hidden" BOOLEAN, PRIMARY KEY ("id"), ' +
 *     'FOREIGN KEY ("id") REFERENCES "public"."u" ("k"))',
 * );
 * ```
 */
export function createTableSql(ref: TableRef, shape: TableShapeSql, hidden?: string): string {
  const parts = shape.columns.map((column) =>
    `${quoteIdent(column.name)} ${column.typeSql}` +
    (column.defaultSql == null ? "" : ` DEFAULT (${column.defaultSql})`) +
    (column.nullable ? "" : " NOT NULL")
  );
  if (hidden) parts.push(hidden);
  const keyList = (columns: readonly string[]) => columns.map(quoteIdent).join(", ");
  if (shape.primaryKey) parts.push(`PRIMARY KEY (${keyList(shape.primaryKey)})`);
  for (const key of shape.unique) parts.push(`UNIQUE (${keyList(key)})`);
  for (const fk of shape.foreignKeys) {
    parts.push(
      `FOREIGN KEY (${quoteIdent(fk.column)}) REFERENCES ${
        qualified(fk.table.schema, fk.table.name)
      } (${quoteIdent(fk.refColumn)})`,
    );
  }
  return `CREATE TABLE ${qualified(ref.schema, ref.name)} (${parts.join(", ")})`;
}
