import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import { Ajv2020 } from "npm:ajv@^8.17.1/dist/2020.js";
import type { Store } from "../src/store/store.ts";
import { appOver } from "./helpers/app.ts";
import { ok, TestServer, uploadForm } from "./helpers/server.ts";
import { SCOPES } from "../src/auth/jwt.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The fields OpenAPI 3.1 allows in an Operation Object, besides `x-` extensions. */
const OPERATION_FIELDS = [
  "tags",
  "summary",
  "description",
  "externalDocs",
  "operationId",
  "parameters",
  "requestBody",
  "responses",
  "callbacks",
  "deprecated",
  "security",
  "servers",
];

/** The redocly CLI that lints the document, pinned: later releases need a newer Node. */
const REDOCLY = "@redocly/cli@2.77.0";

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/** Every method and path the application routes, `:name` written as `{name}`. */
async function servedRoutes(): Promise<string[]> {
  const routes = (await appOver({} as Store)).routes
    .filter((r) => METHODS.includes(r.method.toLowerCase()))
    .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
  return [...new Set(routes)].sort();
}

function operations(doc: Json): [string, Json][] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => [`${method} ${path}`, op] as [string, Json])
  );
}

/** JSON pointer of `segments`, as a URI fragment. */
function pointer(segments: readonly string[]): string {
  return "#" + segments
    .map((s) => "/" + encodeURIComponent(s.replaceAll("~", "~0").replaceAll("/", "~1")))
    .join("");
}

interface Example {
  /** Where the example is, for messages. */
  readonly at: string;
  /** Pointer to the schema it must satisfy. */
  readonly schema: string;
  readonly value: unknown;
}

/**
 * Every example in the document with the schema it illustrates: a schema's own `example`,
 * and the `example` or `examples` of a parameter or media type, against its `schema`.
 */
function examples(doc: Json): Example[] {
  const found: Example[] = [];
  const walk = (node: Json, at: string[]) => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, [...at, String(i)]));
    if (node === null || typeof node !== "object") return;
    const target = "schema" in node ? pointer([...at, "schema"]) : pointer(at);
    if ("example" in node) found.push({ at: at.join("/"), schema: target, value: node.example });
    for (const [name, example] of Object.entries<Json>(node.examples ?? {})) {
      found.push({ at: `${at.join("/")}/examples/${name}`, schema: target, value: example.value });
    }
    for (const [key, child] of Object.entries(node)) {
      if (key !== "example" && key !== "examples") walk(child, [...at, key]);
    }
  };
  walk(doc, []);
  return found;
}

function validator(doc: Json): (schema: string, value: unknown) => string | undefined {
  // OpenAPI adds keywords (example, discriminator) that are not JSON Schema's; formats are
  // documentation here, so only structure and types are checked.
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(doc, "openapi.json");
  return (schema, value) => {
    const validate = ajv.compile({ $ref: `openapi.json${schema}` });
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  };
}

Deno.test("OpenAPI: the document covers every route, and every example fits its schema", async (t) => {
  const server = await TestServer.start({});
  try {
    const answer = await server.request("GET", "openapi.json", { token: null });
    const doc: Json = ok(answer);

    await t.step("it is OpenAPI 3.1, public, with a bearer scheme", () => {
      assert.match(doc.openapi, /^3\.1\./);
      assert.equal(doc.components.securitySchemes.bearer.scheme, "bearer");
      assert.deepEqual(doc.security, [{ bearer: [] }]);
      assert.equal(doc.servers[0].url, "/");
    });

    await t.step("every route the app serves appears, and nothing it does not", async () => {
      const documented = operations(doc).map(([key]) => key).sort();
      assert.deepEqual(documented, await servedRoutes());
      assert.ok(documented.length >= 20, `${documented.length} operations`);
    });

    await t.step("every operation documents a success, and the API's its errors", () => {
      for (const [key, op] of operations(doc)) {
        const statuses = Object.keys(op.responses);
        assert.ok(statuses.some((s) => s.startsWith("2")), `${key}: no success response`);
        if (!key.includes("/api/v1/") || key.endsWith("/openapi.json")) continue;
        // A download ticket is its own credential: its link is followed without a token.
        if (key.includes("/api/v1/download/")) {
          assert.deepEqual(op.security, [], `${key}: public`);
          continue;
        }
        for (const status of ["400", "401", "403", "500"]) {
          assert.ok(statuses.includes(status), `${key}: no ${status}`);
          const schema = op.responses[status].content["application/json"].schema;
          assert.equal(schema.$ref, "#/components/schemas/Error", `${key} ${status}`);
        }
        assert.ok(op.summary, `${key}: no summary`);
      }
    });

    await t.step("every error an operation can answer is listed", () => {
      const keyRef = "#/components/parameters/IdempotencyKey";
      for (const [key, op] of operations(doc)) {
        if (!key.includes("/api/v1/") || key.endsWith("/openapi.json")) continue;
        // A download ticket is its own credential: its link is followed without a token.
        if (key.includes("/api/v1/download/")) {
          assert.deepEqual(op.security, [], `${key}: public`);
          continue;
        }
        const statuses = Object.keys(op.responses);
        assert.ok(statuses.includes("503"), `${key}: no 503`);
        if (op.requestBody) {
          for (const status of ["408", "413"]) {
            assert.ok(statuses.includes(status), `${key}: takes a body, no ${status}`);
          }
        }
        const keyed = (op.parameters ?? []).some((p: Json) => p.$ref === keyRef);
        if (keyed) {
          assert.match(op.responses["409"]?.description ?? "", /idempotency_key_reused/, key);
          assert.match(op.responses["409"].description, /idempotency_key_in_use/, key);
          assert.ok(
            op.responses["200"].headers?.["Idempotent-Replayed"],
            `${key}: no replay header`,
          );
        }
      }
      const keyedCount = operations(doc).filter(([, op]) =>
        (op.parameters ?? []).some((p: Json) =>
          p.$ref === keyRef
        )
      ).length;
      assert.ok(keyedCount >= 10, `${keyedCount} keyed writes`);
    });

    await t.step("the conditional GETs document If-None-Match, ETag and 304", () => {
      for (const key of ["get /api/v1/table/{table_name}", "get /api/v1/openapi.json"]) {
        const op = operations(doc).find(([k]) => k === key)?.[1];
        assert.ok(op, key);
        assert.ok(
          op.parameters.some((p: Json) => p.in === "header" && p.name === "if-none-match"),
          `${key}: no If-None-Match`,
        );
        assert.ok(op.responses["304"], `${key}: no 304`);
        assert.ok(op.responses["200"].headers?.ETag, `${key}: no ETag header`);
      }
    });

    await t.step("operations carry only OpenAPI's fields, and each a unique operationId", () => {
      const ids = new Map<string, string>();
      for (const [key, op] of operations(doc)) {
        const unknown = Object.keys(op).filter((field) =>
          !OPERATION_FIELDS.includes(field) && !field.startsWith("x-")
        );
        assert.deepEqual(unknown, [], `${key}: fields OpenAPI does not define`);
        assert.match(op.operationId ?? "", /^[a-z][A-Za-z]+$/, `${key}: operationId`);
        assert.equal(ids.get(op.operationId), undefined, `${key}: operationId reused`);
        ids.set(op.operationId, key);
      }
    });

    await t.step("every API operation states its scope, to tools and to readers", () => {
      for (const [key, op] of operations(doc)) {
        if (!key.includes("/api/v1/") || key.endsWith("/openapi.json")) continue;
        // A download ticket is its own credential: its link is followed without a token.
        if (key.includes("/api/v1/download/")) {
          assert.deepEqual(op.security, [], `${key}: public`);
          continue;
        }
        assert.equal(op.security?.length, 1, `${key}: security`);
        const [scope] = op.security[0].bearer;
        assert.ok((SCOPES as readonly string[]).includes(scope), `${key}: scope ${scope}`);
        assert.match(op.description ?? "", new RegExp(`^Needs the \`${scope}\` scope`), key);
      }
      const get = doc.paths["/api/v1/table/{table_name}"].get;
      assert.deepEqual(get.security, [{ bearer: ["tables:read"] }]);
      assert.match(get.description, /`tables:write`/, "write implies read, and says so");
    });

    await t.step("path parameters are all declared", () => {
      for (const [key, op] of operations(doc)) {
        const inPath = [...key.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
        const declared = (op.parameters ?? [])
          .filter((p: Json) => p.in === "path")
          .map((p: Json) => p.name)
          .sort();
        assert.deepEqual(declared, inPath, key);
      }
    });

    await t.step("each example validates against its own schema", () => {
      const check = validator(doc);
      const all = examples(doc);
      assert.ok(all.length >= 20, `only ${all.length} examples found`);
      const failures = all.flatMap(({ at, schema, value }) => {
        const problem = check(schema, value);
        return problem ? [`${at}: ${problem}`] : [];
      });
      assert.deepEqual(failures, []);
    });

    await t.step("the check rejects an example that does not fit", () => {
      const check = validator(doc);
      const body = pointer([
        "paths",
        "/api/v1/table/{table_name}",
        "post",
        "requestBody",
        "content",
        "application/json",
        "schema",
      ]);
      assert.equal(check(body, { table: { columns: [{ name: "id" }] } }) === undefined, false);
      assert.equal(check(body, { table: 5 }) === undefined, false);
    });

    await t.step("the request examples are accepted by the service itself", async () => {
      const created = await server.request("POST", "table/customers", {
        body: doc.paths["/api/v1/table/{table_name}"].post.requestBody.content["application/json"]
          .example,
      });
      ok(created);
    });

    await t.step(
      "the file uploads' body part example is a definition the service takes",
      async () => {
        for (const format of ["csv", "excel"]) {
          const form = doc.paths[`/api/v1/table/{table_name}/upload/${format}`].post.requestBody
            .content["multipart/form-data"];
          const example = form.schema.properties.body.example;
          assert.equal(typeof example, "string", `${format}: the body part's example`);
          const loaded = ok(
            await server.request("POST", `table/from_docs_${format}/upload/${format}`, {
              body: uploadForm(new TextEncoder().encode("id,name\n1,Ada\n"), "a.csv", example),
            }),
          );
          assert.equal(loaded.inserted, 1);
          assert.ok(loaded.table.columns.length >= 2, JSON.stringify(loaded.table));
        }
      },
    );
  } finally {
    await server.stop();
  }
});

Deno.test(`OpenAPI: ${REDOCLY} lint finds no error in the served document`, async () => {
  const app = await appOver({} as Store);
  const dir = await Deno.makeTempDir({ prefix: "openapi-lint-" });
  try {
    const path = `${dir}/openapi.json`;
    await Deno.writeTextFile(path, await (await app.request("/api/v1/openapi.json")).text());
    // Only the npm registry is needed: the telemetry and the update check stay off.
    const output = await new Deno.Command("npx", {
      args: ["-y", REDOCLY, "lint", "--format=json", path],
      env: { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout);
    const start = text.indexOf("{");
    assert.ok(start >= 0, `no report: ${text}${new TextDecoder().decode(output.stderr)}`);
    const report: { problems: { ruleId: string; severity: string; message: string }[] } = JSON
      .parse(text.slice(start));
    const errors = report.problems.filter((p) => p.severity === "error");
    assert.deepEqual(errors.map((p) => `${p.ruleId}: ${p.message}`), []);
    const missingIds = report.problems.filter((p) => p.ruleId === "operation-operationId");
    assert.deepEqual(missingIds, []);
    assert.equal(output.code, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
