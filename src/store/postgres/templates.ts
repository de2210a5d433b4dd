/**
 * Template versions in the metadata schema: one row per version, the definition as JSON
 * text beside its columns' canonical types, so compatibility never re-derives them. A
 * change holds its template name's advisory lock, so one version at a time is added or
 * dropped per name across every instance.
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
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { takeLocks, templateLock } from "./locks.ts";
import { META } from "./metadata.ts";
import {
  TEMPLATE_COLUMNS,
  TEMPLATE_ORDER,
  templateFromRow,
  templateVersions,
} from "../shared/template_rows.ts";

export { templateVersions };

/**
 * Template versions, optionally only those whose name contains `search` (any case) and only
 * each template's latest version.
 */
export async function listTemplates(
  session: Session,
  options: ListTemplatesOptions,
): Promise<Template[]> {
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
}

/**
 * Stores a new version of a template unless `admit`, given the existing versions newest
 * first, throws. A template that exists keeps the spelling of its name.
 */
export function addTemplate(
  { database }: StoreContext,
  template: NewTemplate,
  admit: (existing: readonly StoredTemplate[]) => void,
  keyed?: KeyedWrite<Template>,
): Promise<Template> {
  return keyedTransaction(database, keyed, async (session) => {
    await takeLocks(session, [templateLock(template.name)]);
    const existing = await templateVersions(session, template.name);
    admit(existing);
    const added: Template = {
      name: existing[0]?.template.name ?? template.name,
      table_template: template.definition,
      version: formatVersion(template.version),
      compatibility: template.compatibility,
      created_at: new Date().toISOString(),
    };
    await session.run(
      `INSERT INTO ${META}.templates (${TEMPLATE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
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
    if (keyed) await keepAnswer(session, keyed, added);
    return added;
  });
}

/** Deletes one version, or all; 404 when there is none. Returns the template's name. */
export function dropTemplate(
  { database }: StoreContext,
  name: string,
  version?: Version | "latest",
  keyed?: KeyedWrite<string>,
): Promise<string> {
  return keyedTransaction(database, keyed, async (session) => {
    await takeLocks(session, [templateLock(name)]);
    const existing = await templateVersions(session, name);
    const [chosen] = pickVersions(name, existing, version);
    const stored = chosen!.template.name;
    const only = version === undefined ? undefined : chosen!.version;
    await session.run(
      `DELETE FROM ${META}.templates WHERE lower(name) = lower($1)
         AND ($2::integer IS NULL OR (major = $2 AND minor = $3))`,
      [stored, only?.major ?? null, only?.minor ?? null],
    );
    if (keyed) await keepAnswer(session, keyed, stored);
    return stored;
  });
}
