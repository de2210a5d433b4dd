/**
 * Template versions on either engine: one row per version in the metadata schema, the
 * definition as JSON text beside its columns' canonical types, so compatibility never
 * re-derives them. A change holds its template name's lock, so one version at a time is
 * added or dropped per name.
 *
 * @module
 */

import {
  formatVersion,
  pickVersions,
  type StoredTemplate,
  type Template,
  type Version,
} from "../../catalog/templates.ts";
import type { KeyedWrite, ListTemplatesOptions, NewTemplate } from "../store.ts";
import type { Core, SqlSession } from "./core.ts";
import { templateLock } from "./locks.ts";
import { META } from "./metadata_rows.ts";
import {
  TEMPLATE_COLUMNS,
  TEMPLATE_ORDER,
  templateFromRow,
  templateVersions,
} from "./template_rows.ts";

/** Every version of a template (name in any case), newest first; empty when there is none. */
export function versionsOf<S extends SqlSession>(
  core: Core<S>,
  name: string,
): Promise<StoredTemplate[]> {
  return core.read((session) => templateVersions(session, name));
}

/**
 * Template versions, optionally only those whose name contains `search` (any case) and only
 * each template's latest version.
 */
export function listTemplates<S extends SqlSession>(
  core: Core<S>,
  options: ListTemplatesOptions,
): Promise<Template[]> {
  return core.read(async (session) => {
    const rows = await session.rows(
      `SELECT ${TEMPLATE_COLUMNS} FROM (
         SELECT *, row_number() OVER (PARTITION BY lower(name) ORDER BY major DESC, minor DESC)
           AS rank
         FROM ${META}.templates WHERE strpos(lower(name), lower($1)) > 0) t
       WHERE NOT $2 OR rank = 1
       ORDER BY ${TEMPLATE_ORDER[options.orderBy]}, template_id DESC`,
      [options.search ?? "", options.latest],
    );
    return rows.map((row) => templateFromRow(row).template);
  });
}

/**
 * Adds a version: `admit` sees the versions stored under the name (any case), newest
 * first, throws. A template that exists keeps the spelling of its name.
 */
export function addTemplate<S extends SqlSession>(
  core: Core<S>,
  template: NewTemplate,
  admit: (existing: readonly StoredTemplate[]) => void,
  keyed?: KeyedWrite<Template>,
): Promise<Template> {
  return core.change([templateLock(template.name)], keyed, async (session) => {
    const existing = await templateVersions(session, template.name);
    admit(existing);
    const added: Template = {
      name: existing[0]?.template.name ?? template.name,
      table_template: template.definition,
      version: formatVersion(template.version),
      compatibility: template.compatibility,
      created_at: new Date().toISOString(),
    };
    const id = core.metadata.nextTemplateId;
    await session.run(
      `INSERT INTO ${META}.templates (${id ? "template_id, " : ""}${TEMPLATE_COLUMNS})
       VALUES (${id ? `${id}, ` : ""}$1, $2, $3, $4, $5, $6, $7)`,
      [
        added.name,
        template.version.major,
        template.version.minor,
        template.compatibility,
        JSON.stringify(template.definition),
        JSON.stringify(template.types),
        added.created_at,
      ],
    );
    return added;
  });
}

/**
 * Drops one version of a template, its latest, or every version when `version` is
 * undefined; 404 when there is none. Answers the template's stored name.
 */
export function dropTemplate<S extends SqlSession>(
  core: Core<S>,
  name: string,
  version?: Version | "latest",
  keyed?: KeyedWrite<string>,
): Promise<string> {
  return core.change([templateLock(name)], keyed, async (session) => {
    const existing = await templateVersions(session, name);
    const [chosen] = pickVersions(name, existing, version);
    const stored = chosen!.template.name;
    const only = version === undefined ? undefined : chosen!.version;
    await session.run(
      `DELETE FROM ${META}.templates WHERE lower(name) = lower($1)
         AND ($2::integer IS NULL OR (major = $2 AND minor = $3))`,
      [stored, only?.major ?? null, only?.minor ?? null],
    );
    return stored;
  });
}
