/**
 * Tables in response form assembled from the rows each engine reads: its catalog's columns,
 * and the metadata's constraints and template origins. The queries are the engine's; how
 * their rows make a {@link Table} is the same on both.
 *
 * @module
 */

import type { Column, ForeignKey, KeyConstraint, Table } from "../../catalog/model.ts";

/** The rows {@link assembleTables} reads, each named by the columns the engines select. */
export interface DescriptionRows {
  /** `table_id, column_id, column_name, data_type, is_nullable`, and the default's source. */
  readonly columns: readonly Record<string, unknown>[];
  /** `table_id, kind, constraint_name, column_ids, ref_schema, ref_table, ref_column`. */
  readonly constraints: readonly Record<string, unknown>[];
  /** `table_id, template_name, template_version`. */
  readonly origins: readonly Record<string, unknown>[];
}

/**
 * Full response-form tables for `tables`, in the same order, from the rows read for them;
 * `defaultOf` gives a column row's default as the service shows it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assembleTables } from "./table_descriptions.ts";
 *
 * const [table] = assembleTables([{ id: 1, schema: "public", name: "t" }], {
 *   columns: [{ table_id: 1, column_id: 1, column_name: "id", data_type: "INTEGER", is_nullable: false }],
 *   constraints: [{ table_id: 1, kind: "PRIMARY KEY", constraint_name: "t_pkey", column_ids: [1] }],
 *   origins: [],
 * }, () => null);
 * assert.deepEqual(table!.constraints.primary_key, { name: "t_pkey", columns: ["id"] });
 * ```
 */
export function assembleTables(
  tables: readonly { readonly id: number; readonly schema: string; readonly name: string }[],
  rows: DescriptionRows,
  defaultOf: (row: Record<string, unknown>) => string | null,
): Table[] {
  const origins = new Map(rows.origins.map((r) => [r.table_id as number, {
    name: r.template_name as string,
    version: r.template_version as string,
  }]));

  const columns = new Map<number, Column[]>();
  for (const r of rows.columns) {
    const list = columns.get(r.table_id as number) ?? [];
    list.push({
      id: r.column_id as number,
      name: r.column_name as string,
      type: r.data_type as string,
      default: defaultOf(r),
      is_nullable: r.is_nullable as boolean,
    });
    columns.set(r.table_id as number, list);
  }

  const constraints = new Map<
    number,
    { pk: KeyConstraint | null; unique: KeyConstraint[]; fks: ForeignKey[] }
  >();
  for (const r of rows.constraints) {
    const tableId = r.table_id as number;
    const entry = constraints.get(tableId) ?? { pk: null, unique: [], fks: [] };
    const names = new Map((columns.get(tableId) ?? []).map((c) => [c.id, c.name]));
    const columnNames = (r.column_ids as number[]).map((id) => names.get(id) ?? `#${id}`);
    const name = r.constraint_name as string;
    if (r.kind === "PRIMARY KEY") entry.pk = { name, columns: columnNames };
    else if (r.kind === "UNIQUE") entry.unique.push({ name, columns: columnNames });
    else {
      entry.fks.push({
        name,
        column: columnNames[0]!,
        reference_table: r.ref_table as string,
        reference_column: r.ref_column as string,
        reference_schema: r.ref_schema as string,
      });
    }
    constraints.set(tableId, entry);
  }

  return tables.map((t) => {
    const c = constraints.get(t.id);
    return {
      name: t.name,
      schema: t.schema,
      columns: columns.get(t.id) ?? [],
      constraints: {
        primary_key: c?.pk ?? null,
        unique: c?.unique ?? [],
        foreign_keys: c?.fks ?? [],
      },
      ...(origins.has(t.id) ? { template: origins.get(t.id) } : {}),
    };
  });
}
