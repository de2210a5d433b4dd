/**
 * Routes of the table template resource: create a version, check one without storing it,
 * list, get and delete.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { hasScope } from "../../auth/jwt.ts";
import { type AuthVariables } from "../auth.ts";
import { planTable, type TablePlan } from "../../catalog/definition.ts";
import type { TableRef } from "../../catalog/model.ts";
import { COMPATIBILITY_MODES } from "../../catalog/compatibility.ts";
import { checkTemplateName } from "../../catalog/names.ts";
import {
  admitVersion,
  compareVersions,
  draftTemplate,
  formatVersion,
  judge,
  parseVersion,
  pickVersions,
  type StoredTemplate,
  type Template,
  TEMPLATE_ORDERS,
  typedVersion,
  type Version,
} from "../../catalog/templates.ts";
import { ApiError, MAX_DETAILS, summarise } from "../../errors.ts";
import type { Store } from "../../store/store.ts";
import {
  BooleanQuery,
  ColumnSpecShape,
  ConstraintsSpecShape,
  errorResponses,
  parseBoolean,
  parseChoice,
  TableDefinitionShape,
} from "./shapes.ts";
import { scoped } from "./scoped.ts";
import { validationHook } from "./validation.ts";
import { IdempotencyKeyHeader, type IdempotencyVariables, keyedWrite } from "./idempotency.ts";

type Env = { Variables: AuthVariables & IdempotencyVariables };

const TemplateParams = z.object({ table_template_name: z.string() });

const TemplateRequestShape = z.object({
  table_template: TableDefinitionShape.nullish(),
  version: z.string().nullish().openapi({
    description: "MAJOR.MINOR, greater than every existing version; default 1.0",
    example: "1.0",
  }),
  compatibility: z.string().nullish().openapi({
    enum: [...COMPATIBILITY_MODES],
    description: "Checked against the latest earlier version (all of them for _transitive); " +
      "case-insensitive; default none",
  }),
}).openapi("TableTemplateRequest");

const templateExample = {
  table_template: {
    columns: [
      { name: "id", type: "bigserial" },
      { name: "email", type: "varchar", is_nullable: false },
    ],
    constraints: { primary_key: { columns: ["id"] } },
  },
  version: "1.0",
  compatibility: "backward",
};

const TemplateShape = z.object({
  name: z.string(),
  table_template: z.object({
    columns: z.array(ColumnSpecShape),
    constraints: ConstraintsSpecShape,
  }),
  version: z.string(),
  compatibility: z.string(),
  created_at: z.string().openapi({ format: "date-time" }),
}).openapi("TableTemplate");

const ViolationShape = z.object({
  version: z.string().openapi({ description: "The earlier version compared against" }),
  column: z.string().optional(),
  key: z.string().optional(),
  change: z.string().openapi({ example: "column_added" }),
  rule: z.enum(["backward", "forward"]),
  message: z.string(),
}).openapi("CompatibilityViolation");

const templateBody = {
  required: true,
  content: { "application/json": { schema: TemplateRequestShape, example: templateExample } },
};

const createTemplate = createRoute(scoped("templates:write", {
  method: "post",
  operationId: "createTemplate",
  path: "/table_template/{table_template_name}",
  summary: "Create a template version",
  description: "409 when the version is not newer than every existing one, or when it breaks " +
    "its compatibility mode against the earlier versions (one details entry per violation).",
  tags: ["templates"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TemplateParams,
    body: templateBody,
  },
  responses: {
    200: {
      description: "The stored version",
      content: { "application/json": { schema: z.object({ table_template: TemplateShape }) } },
    },
    ...errorResponses(409, 413, 415, 422),
  },
}));

const checkCompatibility = createRoute(scoped("templates:read", {
  method: "post",
  operationId: "checkTemplateCompatibility",
  path: "/table_template/{table_template_name}/compatibility",
  summary: "Check a template version's compatibility without storing it",
  description: "Judges the body as a create would, against the existing versions older than " +
    "its version (all existing versions when it gives none).",
  tags: ["templates"],
  request: { params: TemplateParams, body: templateBody },
  responses: {
    200: {
      description: "The verdict, with every violation",
      content: {
        "application/json": {
          schema: z.object({ is_compatible: z.boolean(), details: z.array(ViolationShape) }),
        },
      },
    },
    ...errorResponses(413, 415, 422),
  },
}));

const listTemplates = createRoute(scoped("templates:read", {
  method: "get",
  operationId: "listTemplates",
  path: "/table_template",
  summary: "List template versions",
  tags: ["templates"],
  request: {
    query: z.object({
      search: z.string().optional().openapi({ description: "Part of the name, any case" }),
      order_by: z.string().optional().openapi({ enum: [...TEMPLATE_ORDERS] }),
      latest: BooleanQuery,
    }),
  },
  responses: {
    200: {
      description: "Template versions",
      content: {
        "application/json": {
          schema: z.object({ table_templates: z.array(TemplateShape) }),
        },
      },
    },
    ...errorResponses(),
  },
}));

const VersionQuery = z.string().optional().openapi({
  description: "latest, or a version such as 1.0",
});

const getTemplate = createRoute(scoped("templates:read", {
  method: "get",
  operationId: "getTemplate",
  path: "/table_template/{table_template_name}",
  summary: "Get a template's versions",
  tags: ["templates"],
  request: { params: TemplateParams, query: z.object({ version: VersionQuery }) },
  responses: {
    200: {
      description: "The asked-for versions (all without `version`), and every version number",
      content: {
        "application/json": {
          schema: z.object({
            table_templates: z.array(TemplateShape),
            versions: z.array(z.string()).openapi({ description: "Newest first" }),
          }),
        },
      },
    },
    ...errorResponses(404),
  },
}));

const deleteTemplate = createRoute(scoped("templates:write", {
  method: "delete",
  operationId: "deleteTemplate",
  path: "/table_template/{table_template_name}",
  summary: "Delete one version of a template, or all",
  tags: ["templates"],
  request: {
    headers: IdempotencyKeyHeader,
    params: TemplateParams,
    query: z.object({ version: VersionQuery }),
  },
  responses: {
    200: {
      description: "Deleted",
      content: {
        "application/json": {
          schema: z.object({ message: z.string(), table_template_name: z.string() }),
        },
      },
    },
    ...errorResponses(404),
  },
}));

/**
 * A `version` query parameter: absent, `latest` (any case), or a version; 400 otherwise.
 */
function versionQuery(
  value: string | undefined,
  field = "version",
): Version | "latest" | undefined {
  if (value === undefined || value === "") return undefined;
  if (value.toLowerCase() === "latest") return "latest";
  return parseVersion(value, `${field} query parameter`);
}

/** The query parameters that make a table from a template, for route definitions. */
export const TemplateUseQuery = {
  template: z.string().optional().openapi({
    description: "Make the table from this template instead of a body definition",
  }),
  template_version: z.string().optional().openapi({
    description: "The template's version: latest (the default) or a version such as 1.0",
  }),
};

/**
 * The plan of a table at `ref` made from the template a request names in its `template`
 * and `template_version` (default latest) query parameters, with the template recorded as
 * its origin; undefined when the request names none. 400 for a version without a template;
 * 403 without `templates:read`; 404 when the template or the version does not exist.
 */
export async function planFromTemplate(
  c: Context<Env>,
  store: Store,
  ref: TableRef,
): Promise<TablePlan | undefined> {
  const name = c.req.query("template");
  const versionText = c.req.query("template_version");
  if (name === undefined || name === "") {
    if (versionText) {
      throw ApiError.badRequest("Query parameter template_version needs a template parameter");
    }
    return undefined;
  }
  if (!hasScope(c.get("principal"), "templates:read")) {
    throw ApiError.forbidden('Making a table from a template needs the "templates:read" scope');
  }
  const version = versionQuery(versionText, "template_version") ?? "latest";
  const existing = await store.templateVersions(checkTemplateName(name));
  const { template } = pickVersions(name, existing, version)[0]!;
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

/** Template routes over `store`. */
export function templateRoutes(store: Store): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });

  /** The draft of a request, its definition checked by the store, typed for compatibility. */
  const draftOf = async (name: string, body: z.infer<typeof TemplateRequestShape>) => {
    checkTemplateName(name);
    try {
      const draft = draftTemplate(name, body);
      const types = await store.columnTypes(draft.plan);
      const typed = typedVersion(formatVersion(draft.version), draft.definition, types);
      return { draft, types, typed };
    } catch (error) {
      throw inTemplateTerms(error, name);
    }
  };

  app.openapi(createTemplate, async (c) => {
    const { draft, types, typed } = await draftOf(
      c.req.valid("param").table_template_name,
      c.req.valid("json"),
    );
    const answer = (template: Template) => ({ status: 200, body: { table_template: template } });
    const template = await store.addTemplate(
      { ...draft, types },
      (existing) => admitVersion(draft, existing.map(typedOf), typed),
      keyedWrite(c, answer),
    );
    return c.json(answer(template).body, 200);
  });

  app.openapi(checkCompatibility, async (c) => {
    const body = c.req.valid("json");
    const { draft, typed } = await draftOf(c.req.valid("param").table_template_name, body);
    const existing = await store.templateVersions(draft.name);
    const earlier = body.version == null
      ? existing
      : existing.filter((e) => compareVersions(e.version, draft.version) < 0);
    const verdict = judge(draft.compatibility, earlier.map((e) => typedOf(e).typed), typed);
    // Capped as error details are: a wide template against many versions can break thousands.
    const details = verdict.details.slice(0, MAX_DETAILS);
    return c.json({ is_compatible: verdict.is_compatible, details }, 200);
  });

  app.openapi(listTemplates, async (c) => {
    const query = c.req.valid("query");
    const templates = await store.listTemplates({
      search: query.search,
      orderBy: parseChoice("order_by", query.order_by, TEMPLATE_ORDERS, "recent"),
      latest: parseBoolean("latest", query.latest),
    });
    return c.json({ table_templates: templates }, 200);
  });

  app.openapi(getTemplate, async (c) => {
    const name = checkTemplateName(c.req.valid("param").table_template_name);
    const version = versionQuery(c.req.valid("query").version);
    const existing = await store.templateVersions(name);
    return c.json({
      table_templates: pickVersions(name, existing, version).map((e) => e.template),
      versions: existing.map((e) => e.template.version),
    }, 200);
  });

  app.openapi(deleteTemplate, async (c) => {
    const name = checkTemplateName(c.req.valid("param").table_template_name);
    const version = versionQuery(c.req.valid("query").version);
    const what = version === undefined
      ? "every version of template"
      : version === "latest"
      ? "the latest version of template"
      : `version ${formatVersion(version)} of template`;
    const answer = (stored: string) => ({
      status: 200,
      body: { message: `Deleted ${what} "${stored}"`, table_template_name: stored },
    });
    const stored = await store.dropTemplate(name, version, keyedWrite(c, answer));
    return c.json(answer(stored).body, 200);
  });

  return app;
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
