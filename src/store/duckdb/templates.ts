/**
 * Template versions in the metadata schema: one row per version, the definition as JSON
 * text beside its columns' canonical types, so compatibility never re-derives them.
 *
 * @module
 */

import type { Compatibility } from "../../catalog/compatibility.ts";
import {
  formatVersion,
  type StoredTemplate,
  type Template,
  type TemplateDefinition,
  type TemplateOrder,
  type Version,
} from "../../catalog/templates.ts";
import type { Session } from "./database.ts";
import { META } from "./metadata.ts";

const COLUMNS = "name, major, minor, compatibility, definition, column_types, created_at";

const ORDER: Record<TemplateOrder, string> = {
  recent: "template_id DESC",
  name_asc: "lower(name), major DESC, minor DESC",
  name_desc: "lower(name) DESC, major DESC, minor DESC",
};

/** Every version of a template, newest first; empty when there is none. */
export async function templateVersions(
  session: Session,
  name: string,
): Promise<StoredTemplate[]> {
  const rows = await session.rows(
    `SELECT ${COLUMNS} FROM ${META}.templates WHERE lower(name) = lower($1)
     ORDER BY major DESC, minor DESC`,
    [name],
  );
  return rows.map(toTemplate);
}

/**
 * Template versions, optionally only those whose name contains `search` (any case) and only
 * each template's latest version.
 */
export async function listTemplates(
  session: Session,
  options: { readonly search?: string; readonly orderBy: TemplateOrder; readonly latest: boolean },
): Promise<StoredTemplate[]> {
  const latest = options.latest
    ? "QUALIFY row_number() OVER (PARTITION BY lower(name) ORDER BY major DESC, minor DESC) = 1"
    : "";
  const rows = await session.rows(
    `SELECT ${COLUMNS} FROM ${META}.templates
     WHERE contains(lower(name), lower($1)) ${latest}
     ORDER BY ${ORDER[options.orderBy]}, template_id DESC`,
    [options.search ?? ""],
  );
  return rows.map(toTemplate);
}

/** Stores a new version; the caller has checked it may join the others. */
export async function insertTemplate(
  session: Session,
  template: TemplateFields & { readonly types: readonly string[] },
): Promise<Template> {
  await session.run(
    `INSERT INTO ${META}.templates
     VALUES (nextval('${META}.template_ids')::INTEGER, $1, $2, $3, $4, $5, $6, $7)`,
    [
      template.name,
      template.version.major,
      template.version.minor,
      template.compatibility,
      JSON.stringify(template.definition),
      JSON.stringify(template.types),
      template.createdAt,
    ],
  );
  return shown(template);
}

/** What a stored version is made of. */
interface TemplateFields {
  readonly name: string;
  readonly version: Version;
  readonly compatibility: Compatibility;
  readonly definition: TemplateDefinition;
  readonly createdAt: string;
}

/** A version as the API shows it. */
function shown(fields: TemplateFields): Template {
  return {
    name: fields.name,
    table_template: fields.definition,
    version: formatVersion(fields.version),
    compatibility: fields.compatibility,
    created_at: fields.createdAt,
  };
}

/** Deletes one version of a template, or every version when `version` is undefined. */
export async function deleteTemplate(
  session: Session,
  name: string,
  version?: Version,
): Promise<void> {
  await session.run(
    `DELETE FROM ${META}.templates WHERE lower(name) = lower($1)
       AND ($2::INTEGER IS NULL OR (major = $2 AND minor = $3))`,
    [name, version?.major ?? null, version?.minor ?? null],
  );
}

function toTemplate(row: Record<string, unknown>): StoredTemplate {
  const version = { major: row.major as number, minor: row.minor as number };
  return {
    template: shown({
      name: row.name as string,
      definition: JSON.parse(row.definition as string),
      version,
      compatibility: row.compatibility as Compatibility,
      createdAt: row.created_at as string,
    }),
    version,
    types: JSON.parse(row.column_types as string),
  };
}
