/**
 * Table templates: named, versioned table definitions. Version and compatibility rules,
 * the stored form of a definition, and the decision whether a new version may be added.
 *
 * @module
 */

import { ApiError, summarise } from "../errors.ts";
import {
  type Compatibility,
  COMPATIBILITY_MODES,
  type TypedColumn,
  type TypedKey,
  type TypedVersion,
  type Violation,
  violations,
} from "./compatibility.ts";
import { planTable, type TablePlan } from "./definition.ts";
import type { TableDefinition } from "./model.ts";
import { DEFAULT_SCHEMA, nameKey, printable } from "./names.ts";
import { parseType } from "./types.ts";

/** A column of a stored template: the creation form, every field given. */
export interface TemplateColumn {
  readonly name: string;
  readonly type: string;
  readonly default: string | null;
  readonly is_nullable: boolean;
}

/** A key constraint of a stored template; `name` only when the definition chose one. */
export interface TemplateKey {
  readonly name?: string;
  readonly columns: string[];
}

/** A foreign key of a stored template; `name` and `reference_schema` only when chosen. */
export interface TemplateForeignKey {
  readonly name?: string;
  readonly column: string;
  readonly reference_table: string;
  readonly reference_column: string;
  readonly reference_schema?: string;
}

/**
 * A template's table definition as stored and shown: what the request gave, with nulls
 * dropped and each column's nullability spelled out. Names a table made from it would
 * generate (constraint names) stay ungenerated, so each table gets its own.
 */
export interface TemplateDefinition {
  readonly columns: TemplateColumn[];
  readonly constraints: {
    readonly primary_key: TemplateKey | null;
    readonly unique: TemplateKey[];
    readonly foreign_keys: TemplateForeignKey[];
  };
}

/** A stored template version, response form. */
export interface Template {
  readonly name: string;
  readonly table_template: TemplateDefinition;
  readonly version: string;
  readonly compatibility: Compatibility;
  /** ISO 8601 UTC, e.g. `2026-11-22T10:00:00.000Z`. */
  readonly created_at: string;
}

/** A stored template version: its response form, and what storage knows besides. */
export interface StoredTemplate {
  readonly template: Template;
  readonly version: Version;
  /** Canonical types of the definition's columns, in order, as the storage engine names them. */
  readonly types: readonly string[];
}

/** A version number, `MAJOR.MINOR`. */
export interface Version {
  readonly major: number;
  readonly minor: number;
}

/** How template listings are ordered. */
export const TEMPLATE_ORDERS = ["recent", "name_asc", "name_desc"] as const;
/** A template listing order. */
export type TemplateOrder = typeof TEMPLATE_ORDERS[number];

const VERSION = /^([1-9][0-9]*)\.([0-9]+)$/;
/** Largest major or minor number; both are stored as 32-bit integers. */
const MAX_VERSION_PART = 999_999_999;

/**
 * Parses a version, `MAJOR.MINOR` (`^[1-9][0-9]*\.[0-9]+$`); anything else is 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseVersion } from "./templates.ts";
 *
 * assert.deepEqual(parseVersion("1.10"), { major: 1, minor: 10 });
 * assert.throws(() => parseVersion("2.0.0"), /MAJOR\.MINOR/);
 * assert.throws(() => parseVersion("01.0"), /MAJOR\.MINOR/);
 * ```
 */
export function parseVersion(text: string, field = "version"): Version {
  const match = VERSION.exec(text);
  const major = Number(match?.[1]);
  const minor = Number(match?.[2]);
  if (!match || major > MAX_VERSION_PART || minor > MAX_VERSION_PART) {
    throw ApiError.badRequest(
      `The ${field} "${printable(text)}" must be MAJOR.MINOR, such as "1.0" or "2.13" ` +
        `(each part at most ${MAX_VERSION_PART})`,
    );
  }
  return { major, minor };
}

/**
 * A version as text; the minor number loses leading zeros, so `1.01` is `1.1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatVersion } from "./templates.ts";
 *
 * assert.equal(formatVersion({ major: 2, minor: 0 }), "2.0");
 * ```
 */
export function formatVersion(version: Version): string {
  return `${version.major}.${version.minor}`;
}

/** Negative when `a` is older than `b`, zero when equal, positive when newer. */
export function compareVersions(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor;
}

/**
 * Parses a compatibility mode, case-insensitively; absent is `none`, anything unknown 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCompatibility } from "./templates.ts";
 *
 * assert.equal(parseCompatibility("FULL_Transitive"), "full_transitive");
 * assert.equal(parseCompatibility(undefined), "none");
 * assert.throws(() => parseCompatibility("sideways"));
 * ```
 */
export function parseCompatibility(text: string | null | undefined): Compatibility {
  if (text == null) return "none";
  const lower = text.toLowerCase() as Compatibility;
  if (!COMPATIBILITY_MODES.includes(lower)) {
    throw ApiError.badRequest(
      `The compatibility "${printable(text)}" must be one of ${COMPATIBILITY_MODES.join(", ")}`,
    );
  }
  return lower;
}

/** A new template version, checked, before it is stored. */
export interface TemplateDraft {
  readonly name: string;
  readonly version: Version;
  readonly compatibility: Compatibility;
  readonly definition: TemplateDefinition;
  /** The definition planned as a table, for the checks a table gets. */
  readonly plan: TablePlan;
}

/**
 * Checks a template request: 400 for a bad version or mode, 422 for a definition a table
 * could not be made from (as far as that can be told without the database).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { draftTemplate } from "./templates.ts";
 *
 * const draft = draftTemplate("orders", {
 *   table_template: { columns: [{ name: "id", type: "serial" }] },
 * });
 * assert.equal(draft.compatibility, "none");
 * assert.deepEqual(draft.version, { major: 1, minor: 0 });
 * assert.equal(draft.definition.columns[0]?.is_nullable, false);
 * ```
 */
export function draftTemplate(
  name: string,
  request: {
    readonly table_template?: TableDefinition | null;
    readonly version?: string | null;
    readonly compatibility?: string | null;
  },
): TemplateDraft {
  const version = parseVersion(request.version ?? "1.0");
  const compatibility = parseCompatibility(request.compatibility);
  const given = request.table_template ?? {};
  // Planned as a table named after the template: the checks a table gets, nothing stored.
  const plan = planTable({ schema: DEFAULT_SCHEMA, name }, given);
  return { name, version, compatibility, definition: storedDefinition(given, plan), plan };
}

function storedDefinition(given: TableDefinition, plan: TablePlan): TemplateDefinition {
  const constraints = given.constraints ?? {};
  const key = (k: { name?: string | null; columns: readonly string[] }): TemplateKey => ({
    ...(k.name == null ? {} : { name: k.name }),
    columns: [...k.columns],
  });
  return {
    columns: plan.columns.map((c) => ({
      name: c.name,
      type: c.typeText.trim(),
      default: c.default,
      is_nullable: c.nullable,
    })),
    constraints: {
      primary_key: constraints.primary_key ? key(constraints.primary_key) : null,
      unique: (constraints.unique ?? []).map(key),
      foreign_keys: (constraints.foreign_keys ?? []).map((fk) => ({
        ...(fk.name == null ? {} : { name: fk.name }),
        column: fk.column,
        reference_table: fk.reference_table,
        reference_column: fk.reference_column,
        ...(fk.reference_schema == null ? {} : { reference_schema: fk.reference_schema }),
      })),
    },
  };
}

/**
 * A template version as compatibility sees it, given its columns' canonical types (in
 * column order, as the storage engine names them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { draftTemplate, typedVersion } from "./templates.ts";
 *
 * const draft = draftTemplate("t", { table_template: {
 *   columns: [{ name: "code", type: "varchar(8)" }, { name: "id", type: "int" }],
 *   constraints: { primary_key: { columns: ["id"] } },
 * } });
 * const typed = typedVersion("1.0", draft.definition, ["VARCHAR", "INTEGER"]);
 * assert.equal(typed.columns[0]?.type, "VARCHAR(8)");
 * assert.equal(typed.columns[1]?.nullable, false);
 * assert.deepEqual(typed.keys, [{ text: "primary key (id)", columns: ["id"] }]);
 * ```
 */
export function typedVersion(
  version: string,
  definition: TemplateDefinition,
  types: readonly string[],
): TypedVersion {
  const { primary_key, unique, foreign_keys } = definition.constraints;
  const inPrimaryKey = new Set((primary_key?.columns ?? []).map(nameKey));
  const columns: TypedColumn[] = definition.columns.map((column, i) => {
    // Stored types passed the type grammar when their version was created.
    const parsed = parseType(column.type);
    const canonical = types[i] ?? parsed.sql;
    const length = /^[^(]*\((\d+)\)$/.exec(parsed.sql);
    return {
      name: column.name,
      type: canonical === "VARCHAR" && length ? `VARCHAR(${length[1]})` : canonical,
      nullable: column.is_nullable && !inPrimaryKey.has(nameKey(column.name)),
      defaulted: column.default !== null || parsed.serial !== undefined,
    };
  });
  const key = (kind: string, names: readonly string[], suffix = ""): TypedKey => {
    const columns = names.map(nameKey).sort();
    return { text: `${kind} (${columns.join(", ")})${suffix}`, columns };
  };
  const keys = [
    ...(primary_key ? [key("primary key", primary_key.columns)] : []),
    ...unique.map((k) => key("unique key", k.columns)),
    ...foreign_keys.map((fk) =>
      key(
        "foreign key",
        [fk.column],
        ` referencing ${nameKey(fk.reference_schema ?? DEFAULT_SCHEMA)}.` +
          `${nameKey(fk.reference_table)} (${nameKey(fk.reference_column)})`,
      )
    ),
  ];
  return { version, columns, keys };
}

/**
 * The versions `wanted` names among a template's versions (newest first): all of them when
 * undefined, the newest for `latest`, or the equal one. 404 when the template has no
 * versions, or not the wanted one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pickVersions, type StoredTemplate } from "./templates.ts";
 *
 * const v = (major: number, minor: number) =>
 *   ({ version: { major, minor }, template: { name: "t" } }) as StoredTemplate;
 * const existing = [v(2, 0), v(1, 0)];
 * assert.deepEqual(pickVersions("t", existing, "latest"), [existing[0]]);
 * assert.deepEqual(pickVersions("t", existing, { major: 1, minor: 0 }), [existing[1]]);
 * assert.throws(() => pickVersions("t", existing, { major: 3, minor: 0 }), /no version 3.0/);
 * assert.throws(() => pickVersions("t", [], undefined), /does not exist/);
 * ```
 */
export function pickVersions(
  name: string,
  existing: readonly StoredTemplate[],
  wanted: Version | "latest" | undefined,
): StoredTemplate[] {
  if (existing.length === 0) throw ApiError.notFound(`Template "${name}" does not exist`);
  if (wanted === undefined) return [...existing];
  if (wanted === "latest") return existing.slice(0, 1);
  const chosen = existing.filter((e) => compareVersions(e.version, wanted) === 0);
  if (chosen.length === 0) {
    throw ApiError.notFound(
      `Template "${existing[0]!.template.name}" has no version ${formatVersion(wanted)}`,
    );
  }
  return chosen;
}

/** The outcome of a compatibility check. */
export interface Verdict {
  readonly is_compatible: boolean;
  readonly details: readonly Violation[];
}

/**
 * Judges a new version against the earlier ones (newest first) under its own mode.
 */
export function judge(
  compatibility: Compatibility,
  earlier: readonly TypedVersion[],
  next: TypedVersion,
): Verdict {
  const details = violations(compatibility, earlier, next);
  return { is_compatible: details.length === 0, details };
}

/**
 * Whether a new version may join the existing ones (newest first): 409 when its version is
 * not newer than every existing one, or when it breaks its compatibility mode.
 */
export function admitVersion(
  draft: TemplateDraft,
  existing: readonly { readonly version: Version; readonly typed: TypedVersion }[],
  next: TypedVersion,
): void {
  const latest = existing[0];
  if (latest) {
    const order = compareVersions(draft.version, latest.version);
    if (order <= 0) {
      throw ApiError.conflict(
        order === 0
          ? `Template "${draft.name}" already has version ${formatVersion(draft.version)}`
          : `Version ${formatVersion(draft.version)} of template "${draft.name}" is not newer ` +
            `than its latest version ${formatVersion(latest.version)}`,
      );
    }
  }
  const verdict = judge(draft.compatibility, existing.map((e) => e.typed), next);
  if (!verdict.is_compatible) {
    throw new ApiError(
      409,
      "incompatible_template",
      `Version ${formatVersion(draft.version)} of template "${draft.name}" is not ` +
        `${draft.compatibility} compatible: ${summarise(verdict.details)}`,
      { details: verdict.details },
    );
  }
}
