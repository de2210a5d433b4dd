/**
 * Template versions as the metadata stores them, read the same on both engines: the columns
 * of a row, the orders of a listing, and a row turned back into a stored version.
 *
 * @module
 */

import type { Compatibility } from "../../catalog/compatibility.ts";
import { formatVersion, type StoredTemplate, type TemplateOrder } from "../../catalog/templates.ts";

/** The columns a template version is read and written by, in order. */
export const TEMPLATE_COLUMNS =
  "name, major, minor, compatibility, definition, column_types, created_at";

/** The ORDER BY of each listing order. */
export const TEMPLATE_ORDER: Readonly<Record<TemplateOrder, string>> = {
  recent: "template_id DESC",
  name_asc: "lower(name), major DESC, minor DESC",
  name_desc: "lower(name) DESC, major DESC, minor DESC",
};

/**
 * The query for every version of one template (name in any case, `$1`), newest first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { templateVersionsSql } from "./template_rows.ts";
 *
 * assert.match(templateVersionsSql("m"), /FROM m\.templates WHERE lower\(name\) = lower\(\$1\)/);
 * ```
 */
export function templateVersionsSql(meta: string): string {
  return `SELECT ${TEMPLATE_COLUMNS} FROM ${meta}.templates WHERE lower(name) = lower($1)
     ORDER BY major DESC, minor DESC`;
}

/**
 * A row of {@link TEMPLATE_COLUMNS} as a stored version: the template as the API shows it,
 * its version, and its columns' canonical types.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { templateFromRow } from "./template_rows.ts";
 *
 * const stored = templateFromRow({
 *   name: "t", major: 1, minor: 2, compatibility: "backward",
 *   definition: '{"columns":[]}', column_types: "[]", created_at: "2026-01-01T00:00:00Z",
 * });
 * assert.equal(stored.template.version, "1.2");
 * ```
 */
export function templateFromRow(row: Record<string, unknown>): StoredTemplate {
  const version = { major: row.major as number, minor: row.minor as number };
  return {
    template: {
      name: row.name as string,
      table_template: JSON.parse(row.definition as string),
      version: formatVersion(version),
      compatibility: row.compatibility as Compatibility,
      created_at: row.created_at as string,
    },
    version,
    types: JSON.parse(row.column_types as string),
  };
}
