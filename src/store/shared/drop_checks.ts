/**
 * The checks before a schema or a table is dropped, the same on both engines: a schema that
 * holds tables needs `cascade`, and no table may be referenced from outside what is dropped.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";

/** A foreign key of a table outside the schema that references one of its tables. */
export interface OutsideReference {
  readonly constraint: string;
  readonly schema: string;
  readonly name: string;
}

/**
 * Throws 409 when schema `schema`, holding `tables`, may not be dropped: it holds tables and
 * `cascade` is false, or a table outside it references one of them. `referencing` finds the
 * outside foreign keys of the given table ids; it runs only when the first check passes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkSchemaDrop } from "./drop_checks.ts";
 *
 * await assert.rejects(checkSchemaDrop("s", [{ id: 1 }], false, () => Promise.resolve([])));
 * await checkSchemaDrop("s", [{ id: 1 }], true, () => Promise.resolve([]));
 * ```
 */
export async function checkSchemaDrop(
  schema: string,
  tables: readonly { readonly id: number }[],
  cascade: boolean,
  referencing: (tableIds: number[]) => Promise<readonly OutsideReference[]>,
): Promise<void> {
  if (tables.length > 0 && !cascade) {
    throw ApiError.conflict(
      `Cannot drop schema "${schema}": it holds ${tables.length} table(s); use cascade=true`,
    );
  }
  const outside = await referencing(tables.map((t) => t.id));
  if (outside.length > 0) {
    const first = outside[0]!;
    throw ApiError.conflict(
      `Cannot drop schema "${schema}": foreign key "${first.constraint}" of table ` +
        `"${first.schema}.${first.name}" references one of its tables`,
    );
  }
}

/**
 * Throws 409 when table `row` may not be dropped because `blockers`, other tables' foreign
 * keys, reference it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTableDrop } from "./drop_checks.ts";
 *
 * checkTableDrop({ schema: "s", name: "t" }, []);
 * assert.throws(() =>
 *   checkTableDrop({ schema: "s", name: "t" }, [{ constraint: "fk", schema: "s", name: "u" }])
 * );
 * ```
 */
export function checkTableDrop(
  row: { readonly schema: string; readonly name: string },
  blockers: readonly OutsideReference[],
): void {
  if (blockers.length > 0) {
    const first = blockers[0]!;
    throw ApiError.conflict(
      `Cannot drop table "${row.schema}.${row.name}": foreign key "${first.constraint}" ` +
        `of table "${first.schema}.${first.name}" references it`,
    );
  }
}
