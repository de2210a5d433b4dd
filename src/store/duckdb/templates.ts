/**
 * Template versions in the metadata schema: one row per version, the definition as JSON
 * text beside its columns' canonical types, so compatibility never re-derives them.
 *
 * @module
 */

import type { Compatibility } from "../../catalog/compatibility.ts";
import {
  formatVersion,
  pickVersions,
  type StoredTemplate,
  type Template,
  type TemplateDefinition,
  type TemplateOrder,
  type Version,
} from "../../catalog/templates.ts";
import type { KeyedWrite, NewTemplate } from "../store.ts";
import { noted, type StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { keepAnswer } from "./idempotency.ts";
import { META } from "./metadata.ts";
import {
  TEMPLATE_COLUMNS,
  TEMPLATE_ORDER,
  templateFromRow,
  templateVersions,
} from "../shared/template_rows.ts";
import { templateLock } from "./store_locks.ts";

export { templateVersions };

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
    `SELECT ${TEMPLATE_COLUMNS} FROM ${META}.templates
     WHERE contains(lower(name), lower($1)) ${latest}
     ORDER BY ${TEMPLATE_ORDER[options.orderBy]}, template_id DESC`,
    [options.search ?? ""],
  );
  return rows.map(templateFromRow);
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

/**
 * Stores a new version of a template unless `admit`, given the existing versions newest
 * first, throws; one version at a time per template name. A template that exists keeps
 * the spelling of its name.
 */
export function addTemplate(
  context: StoreContext,
  template: NewTemplate,
  admit: (existing: readonly StoredTemplate[]) => void,
  keyedWrite?: KeyedWrite<Template>,
): Promise<Template> {
  const keyed = noted(context, keyedWrite);
  return context.locks.run(
    [templateLock(template.name)],
    () =>
      context.database.transaction(async (session) => {
        const existing = await templateVersions(session, template.name);
        admit(existing);
        const name = existing[0]?.template.name ?? template.name;
        const createdAt = new Date().toISOString();
        const added = await insertTemplate(session, { ...template, name, createdAt });
        if (keyed) await keepAnswer(session, keyed, added);
        return added;
      }),
  );
}

/** Deletes one version, or all; 404 when there is none. Returns the template's name. */
export function dropTemplate(
  context: StoreContext,
  name: string,
  version?: Version | "latest",
  keyedWrite?: KeyedWrite<string>,
): Promise<string> {
  const keyed = noted(context, keyedWrite);
  return context.locks.run(
    [templateLock(name)],
    () =>
      context.database.transaction(async (session) => {
        const existing = await templateVersions(session, name);
        const [chosen] = pickVersions(name, existing, version);
        const stored = chosen!.template.name;
        await deleteTemplate(session, stored, version && chosen!.version);
        if (keyed) await keepAnswer(session, keyed, stored);
        return stored;
      }),
  );
}
