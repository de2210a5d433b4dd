import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import { Ajv2020 } from "npm:ajv@^8.17.1/dist/2020.js";
import type { Store } from "../src/store/store.ts";
import { appOver } from "./helpers/app.ts";
import { ok, TestServer } from "./helpers/server.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

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
        for (const status of ["400", "401", "403", "500"]) {
          assert.ok(statuses.includes(status), `${key}: no ${status}`);
          const schema = op.responses[status].content["application/json"].schema;
          assert.equal(schema.$ref, "#/components/schemas/Error", `${key} ${status}`);
        }
        assert.ok(op.summary, `${key}: no summary`);
      }
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
  } finally {
    await server.stop();
  }
});
