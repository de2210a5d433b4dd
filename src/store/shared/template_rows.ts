/**
 * Template versions as the metadata stores them, read the same on both engines: the columns
 * of a row, the orders of a listing, a template's versions, and a row turned back into a
 * stored version.
 *
 * @module
 */

import type { Compatibility } from "../../catalog/compatibility.ts";
import { formatVersion, type StoredTemplate, type TemplateOrder } from "../../catalog/templates.ts";
import type { SqlSession } from "./core.ts";
import { META } from "./metadata_rows.ts";

/** The columns a template version is read and written by, in order. */
export const TEMPLATE_COLUMNS =
  "name, major, minor, compatibility, definition, column_types, created_at";

/** The ORDER BY of each listing order. */
export const TEMPLATE_ORDER: Readonly<Record<TemplateOrder, string>> = {
  recent: "template_id DESC",
  name_asc: "lower(name), major DESC, minor DESC",
  name_desc: "lower(name) DESC, major DESC, minor DESC",
};

/** Every version of a template (name in any case), newest first; empty when there is none. */
export async function templateVersions(
  session: SqlSession,
  name: string,
): Promise<StoredTemplate[]> {
  const rows = await session.rows(
    `SELECT ${TEMPLATE_COLUMNS} FROM ${META}.templates WHERE lower(name) = lower($1)
     ORDER BY major DESC, minor DESC`,
    [name],
  );
  return rows.map(templateFromRow);
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
