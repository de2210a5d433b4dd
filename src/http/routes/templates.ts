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
import { COMPATIBILITY_MODES } from "../../catalog/compatibility.ts";
import { checkTemplateName } from "../../catalog/names.ts";
import {
  formatVersion,
  parseVersion,
  type Template,
  TEMPLATE_ORDERS,
  type Version,
} from "../../catalog/templates.ts";
import { ApiError } from "../../errors.ts";
import * as templates from "../../service/templates.ts";
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
 * The template a request names in its `template` and `template_version` (default latest)
 * query parameters to make its table from; undefined when it names none. 400 for a version
 * without a template or a bad version or name; 403 without `templates:read`.
 */
export function templateUse(c: Context<Env>): templates.TemplateUse | undefined {
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
  return { name: checkTemplateName(name), version };
}

/** Template routes over `store`. */
export function templateRoutes(store: Store): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });

  app.openapi(createTemplate, async (c) => {
    const name = checkTemplateName(c.req.valid("param").table_template_name);
    const answer = (template: Template) => ({ status: 200, body: { table_template: template } });
    const template = await templates.createTemplate(
      store,
      name,
      c.req.valid("json"),
      keyedWrite(c, answer),
    );
    return c.json(answer(template).body, 200);
  });

  app.openapi(checkCompatibility, async (c) => {
    const name = checkTemplateName(c.req.valid("param").table_template_name);
    const verdict = await templates.checkTemplate(store, name, c.req.valid("json"));
    return c.json({ is_compatible: verdict.is_compatible, details: [...verdict.details] }, 200);
  });

  app.openapi(listTemplates, async (c) => {
    const query = c.req.valid("query");
    const list = await templates.listTemplates(store, {
      search: query.search,
      orderBy: parseChoice("order_by", query.order_by, TEMPLATE_ORDERS, "recent"),
      latest: parseBoolean("latest", query.latest),
    });
    return c.json({ table_templates: list }, 200);
  });

  app.openapi(getTemplate, async (c) => {
    const name = checkTemplateName(c.req.valid("param").table_template_name);
    const version = versionQuery(c.req.valid("query").version);
    const found = await templates.getTemplate(store, name, version);
    return c.json({ table_templates: found.templates, versions: found.versions }, 200);
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
    const stored = await templates.deleteTemplate(store, name, version, keyedWrite(c, answer));
    return c.json(answer(stored).body, 200);
  });

  return app;
}
