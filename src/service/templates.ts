/**
 * Table templates: versions created under their compatibility mode, checked without being
 * stored, listed, read and deleted; and the plan of a table made from one.
 *
 * @module
 */

import { planTable, type TablePlan } from "../catalog/definition.ts";
import type { TableRef } from "../catalog/model.ts";
import {
  admitVersion,
  compareVersions,
  draftTemplate,
  formatVersion,
  judge,
  pickVersions,
  type StoredTemplate,
  type Template,
  typedVersion,
  type Verdict,
  type Version,
} from "../catalog/templates.ts";
import { ApiError, MAX_DETAILS, summarise } from "../errors.ts";
import type { KeyedWrite, ListTemplatesOptions, Store } from "../store/store.ts";

/** A template version as a request states it: definition, version and mode, all optional. */
export type TemplateRequest = Parameters<typeof draftTemplate>[1];

/** The template a table is to be made from: its checked name and its version. */
export interface TemplateUse {
  readonly name: string;
  readonly version: Version | "latest";
}

/**
 * The plan of a table at `ref` made from the template `use` names, with the template
 * recorded as its origin; undefined when `use` is. 404 when the template or the version
 * does not exist.
 */
export async function planFromTemplate(
  store: Store,
  ref: TableRef,
  use: TemplateUse | undefined,
): Promise<TablePlan | undefined> {
  if (use === undefined) return undefined;
  const existing = await store.templates.versions(use.name);
  const { template } = pickVersions(use.name, existing, use.version)[0]!;
  return {
    ...planTable(ref, template.table_template),
    template: { name: template.name, version: template.version },
  };
}

/**
 * The definition a table is made from: the template's or the body's, never both (400).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { oneDefinition } from "./templates.ts";
 *
 * assert.equal(oneDefinition(undefined, undefined), undefined);
 * assert.throws(() => oneDefinition("template plan", { columns: [] }), /not both/);
 * ```
 */
export function oneDefinition<P>(fromTemplate: P | undefined, given: unknown): P | undefined {
  if (fromTemplate !== undefined && given != null) {
    throw ApiError.badRequest(
      "Give either a template or a table definition in the body, not both",
    );
  }
  return fromTemplate;
}

/**
 * Stores a new version of template `name` (a checked name): 400 for a bad version or mode,
 * 422 for a definition no table could be made from, 409 when the version is not the newest
 * or breaks its compatibility mode against the earlier versions.
 */
export async function createTemplate(
  store: Store,
  name: string,
  request: TemplateRequest,
  keyed?: KeyedWrite<Template>,
): Promise<Template> {
  const { draft, types, typed } = await draftOf(store, name, request);
  return await store.templates.add(
    { ...draft, types },
    (existing) => admitVersion(draft, existing.map(typedOf), typed),
    keyed,
  );
}

/**
 * Judges a template version as {@link createTemplate} would, without storing it: against
 * the existing versions older than its version, or all of them when the request gives none.
 * The details are capped as error details are.
 */
export async function checkTemplate(
  store: Store,
  name: string,
  request: TemplateRequest,
): Promise<Verdict> {
  const { draft, typed } = await draftOf(store, name, request);
  const existing = await store.templates.versions(draft.name);
  const earlier = request.version == null
    ? existing
    : existing.filter((e) => compareVersions(e.version, draft.version) < 0);
  const verdict = judge(draft.compatibility, earlier.map((e) => typedOf(e).typed), typed);
  // Capped as error details are: a wide template against many versions can break thousands.
  return { is_compatible: verdict.is_compatible, details: verdict.details.slice(0, MAX_DETAILS) };
}

/** Template versions in the requested order. */
export async function listTemplates(
  store: Store,
  options: ListTemplatesOptions,
): Promise<Template[]> {
  return await store.templates.list(options);
}

/**
 * The asked-for versions of a template (every one when `version` is undefined) and every
 * version number, newest first; 404 when the template or the version does not exist.
 */
export async function getTemplate(
  store: Store,
  name: string,
  version: Version | "latest" | undefined,
): Promise<{ templates: Template[]; versions: string[] }> {
  const existing = await store.templates.versions(name);
  return {
    templates: pickVersions(name, existing, version).map((e) => e.template),
    versions: existing.map((e) => e.template.version),
  };
}

/** Deletes one version of a template, or every one; returns the template's stored name. */
export async function deleteTemplate(
  store: Store,
  name: string,
  version: Version | "latest" | undefined,
  keyed?: KeyedWrite<string>,
): Promise<string> {
  return await store.templates.drop(name, version, keyed);
}

/** The draft of a request, its definition checked by the store, typed for compatibility. */
async function draftOf(store: Store, name: string, request: TemplateRequest) {
  try {
    const draft = draftTemplate(name, request);
    const types = await store.tables.columnTypes(draft.plan);
    const typed = typedVersion(formatVersion(draft.version), draft.definition, types);
    return { draft, types, typed };
  } catch (error) {
    throw inTemplateTerms(error, name);
  }
}

/** A definition error as the template's, not the table's it was checked as. */
function inTemplateTerms(error: unknown, name: string): unknown {
  if (!(error instanceof ApiError) || error.type !== "invalid_definition") return error;
  const problems = error.details?.length ? error.details : [{ message: error.message }];
  return ApiError.unprocessable(
    `The definition of template "${name}" is invalid: ${summarise(problems)}`,
    error.details,
  );
}

function typedOf(stored: StoredTemplate) {
  return {
    version: stored.version,
    typed: typedVersion(stored.template.version, stored.template.table_template, stored.types),
  };
}
