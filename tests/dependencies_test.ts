/**
 * `deno task` installs every npm package `deno.lock` pins before it runs any task, so the
 * first `task start` downloads whatever that lock holds. It holds the service's dependencies
 * only; the tools of tests and benchmarks are imported with `npm:` specifiers and pinned in
 * `deno.dev.lock`, which `task test`, `task check`, `task bench` and `task reliability` use.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

async function specifiers(lock: string): Promise<string[]> {
  return Object.keys(JSON.parse(await Deno.readTextFile(new URL(lock, ROOT))).specifiers);
}

/** `npm:` specifiers written in the source files under `dir`, without their subpaths. */
async function inlineNpmImports(dir: URL): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) found.push(...await inlineNpmImports(url));
    else if (entry.name.endsWith(".ts")) {
      const text = await Deno.readTextFile(url);
      for (
        const [, name, range] of text.matchAll(/"npm:((?:@[a-z0-9._-]+\/)?[a-z0-9._-]+)@([^/"]+)/g)
      ) {
        found.push(`npm:${name}@${range}`);
      }
    }
  }
  return found;
}

Deno.test("deno.lock pins only the import map, so a first task start installs only the service", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const imports = new Set(Object.values(config.imports as Record<string, string>));
  const extra = (await specifiers("deno.lock")).filter((s) => !imports.has(s));
  assert.deepEqual(
    extra,
    [],
    `deno.lock pins ${extra.join(", ")}, which deno.json's imports do not name, so task start ` +
      "would install it. Restore deno.lock and run files that import test tools with " +
      "--lock=deno.dev.lock, as task test does.",
  );
});

Deno.test("deno.dev.lock pins every npm: import of the tests and benchmarks", async () => {
  const pinned = await specifiers("deno.dev.lock");
  const imports = [
    ...await inlineNpmImports(new URL("src/", ROOT)),
    ...await inlineNpmImports(new URL("tests/", ROOT)),
    ...await inlineNpmImports(new URL("bench/", ROOT)),
  ];
  assert.ok(imports.some((s) => s.startsWith("npm:fast-check@")), imports.join(", "));
  for (const specifier of imports) {
    // deno.lock writes a caret range of a whole major version as the major alone.
    const name = specifier.slice(0, specifier.lastIndexOf("@") + 1);
    assert.ok(pinned.some((s) => s.startsWith(name)), `${specifier} is not in deno.dev.lock`);
  }
});

/** A module as `deno info --json` describes it, with its imports (type-only ones included). */
interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
}

/** The modules `entry` loads, directly or through others, as `deno info --json` lists them. */
async function moduleGraph(entry: string): Promise<InfoModule[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--lock=deno.dev.lock", entry],
    cwd: ROOT,
    stderr: "inherit",
  }).output();
  assert.equal(output.code, 0, `deno info ${entry} failed`);
  return (JSON.parse(new TextDecoder().decode(output.stdout)) as { modules: InfoModule[] })
    .modules;
}

/** `specifier` relative to the project, or undefined when it is not a project file. */
function local(specifier: string): string | undefined {
  return specifier.startsWith(ROOT.href) ? specifier.slice(ROOT.href.length) : undefined;
}

/** The local modules `entry` loads, directly or through others, relative to the project. */
async function localGraph(entry: string): Promise<string[]> {
  return (await moduleGraph(entry)).map((m) => local(m.specifier))
    .filter((path) => path !== undefined);
}

Deno.test("the load and token commands load no module of the store, so no database code", async () => {
  for (const entry of ["src/cli/load/mod.ts", "src/cli/token.ts"]) {
    const graph = await localGraph(entry);
    assert.ok(graph.includes(entry), graph.join(", "));
    assert.deepEqual(graph.filter((path) => path.startsWith("src/store/")), [], entry);
  }
});

/** One import of one project module by another, both relative to the project. */
interface Import {
  readonly from: string;
  readonly to: string;
}

/** The modules that put the service together, and so choose its engine. */
const ASSEMBLY = ["main.ts", "src/server.ts"];

/** The engines, each the only place its database and its SQL exist. */
const ENGINES = ["src/store/duckdb/", "src/store/postgres/"];

/**
 * The one module of another engine an engine may import: PostgreSQL's loads stage their rows,
 * and its results are written as Parquet, in an in-memory DuckDB through the DuckDB store's
 * entry point, and nothing else of it.
 */
const STAGING = "src/store/duckdb/mod.ts";

/** The web UI's server side: it serves the browser's files and calls no layer below. */
const UI = "src/http/ui/";

/** What both engines share (SQL text and rules that read the same on either), naming neither. */
const SHARED = "src/store/shared/";

/**
 * The imports that break the layers, each with the rule it breaks. Data flows one way:
 * `src/http/` → `src/service/` → `src/catalog/` and `src/ingest/` → `src/store/`, and only the
 * assembly (`main.ts`, `src/server.ts`; tests and benchmarks too) names an engine
 * (`src/store/duckdb/`, `src/store/postgres/`): not even `src/store/store.ts`, the interface
 * every engine implements, nor another engine, except that the PostgreSQL engine stages rows
 * through the DuckDB engine's `mod.ts` ({@link STAGING}). Both engines may import
 * `src/store/shared/` ({@link SHARED}), which imports neither engine.
 */
function layerViolations(imports: readonly Import[]): string[] {
  const under = (path: string, ...dirs: string[]) => dirs.some((dir) => path.startsWith(dir));
  const isTest = (path: string) => under(path, "tests/", "bench/") || /_test\.ts$/.test(path);
  const found: string[] = [];
  for (const { from, to } of imports) {
    if (isTest(from)) continue;
    const rule = under(from, "src/service/", "src/catalog/", "src/ingest/") &&
        under(to, "src/http/")
      ? "nothing below the HTTP layer imports it"
      : under(from, UI) && !under(to, UI) && to !== "src/errors.ts"
      ? "the web UI is files for the browser, whose data comes from the API: it serves them only"
      : under(from, "src/catalog/", "src/ingest/") && under(to, "src/service/", "src/store/")
      ? "the catalog and ingest import neither the services nor the store"
      : under(from, SHARED) && (under(to, ...ENGINES) || to.startsWith("npm:"))
      ? "what the engines share names neither engine nor a database client"
      : under(from, "src/pgwire/") && under(to, "src/http/", "src/store/")
      ? "the PostgreSQL listener goes through the services, as the HTTP layer does"
      : under(from, "src/service/", "src/catalog/", "src/ingest/", "src/store/", "src/http/") &&
          under(to, "src/pgwire/")
      ? "nothing but the assembly imports the PostgreSQL listener"
      : ENGINES.some((engine) => under(to, engine) && !under(from, engine)) &&
          !ASSEMBLY.includes(from) && !(under(from, "src/store/postgres/") && to === STAGING)
      ? "only the assembly names an engine; the rest use src/store/store.ts"
      : undefined;
    if (rule !== undefined) found.push(`${from} imports ${to}: ${rule}`);
  }
  return found;
}

/**
 * Every import among the project's modules that a source file under `src/` (tests aside)
 * or `main.ts` loads. Entries are added until every such file is in the graph: some are
 * reached by no import (a worker's script, the commands).
 */
async function projectImports(): Promise<Import[]> {
  const sources: string[] = ["main.ts"];
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory) await walk(`${path}/`);
      else if (path.endsWith(".ts") && !path.endsWith("_test.ts")) sources.push(path);
    }
  };
  await walk("src/");
  const seen = new Set<string>();
  const imports: Import[] = [];
  for (const source of sources) {
    if (seen.has(source)) continue;
    for (const module of await moduleGraph(source)) {
      const from = local(module.specifier);
      if (from === undefined || seen.has(from)) continue;
      seen.add(from);
      for (const dependency of module.dependencies ?? []) {
        for (const target of [dependency.code?.specifier, dependency.type?.specifier]) {
          const to = target === undefined ? undefined : local(target);
          if (to !== undefined) imports.push({ from, to });
        }
      }
    }
  }
  assert.ok(sources.every((source) => seen.has(source)), "some source was not walked");
  return imports;
}

Deno.test("layerViolations() names each import that goes against the layers", () => {
  assert.deepEqual(
    layerViolations([
      { from: "src/service/tables.ts", to: "src/http/routes/shapes.ts" },
      { from: "src/catalog/rows.ts", to: "src/store/store.ts" },
      { from: "src/ingest/spool.ts", to: "src/service/bodies.ts" },
      { from: "src/http/app.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/service/uploads.ts", to: "src/store/duckdb/rows.ts" },
      { from: "src/store/store.ts", to: "src/store/duckdb/rows.ts" },
      { from: "src/service/tables.ts", to: "src/store/postgres/types.ts" },
      { from: "src/store/duckdb/ddl.ts", to: "src/store/postgres/types.ts" },
      { from: "src/store/postgres/mod.ts", to: "src/store/duckdb/sql.ts" },
      { from: "src/store/postgres/uploads.ts", to: "src/store/duckdb/staging.ts" },
      { from: "src/store/duckdb/staging.ts", to: "src/store/postgres/mod.ts" },
      { from: "src/service/uploads.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/store/shared/cursor.ts", to: "src/store/duckdb/sql.ts" },
      { from: "src/store/shared/cursor.ts", to: "src/store/postgres/mod.ts" },
      { from: "src/http/ui/mod.ts", to: "src/service/tables.ts" },
      { from: "src/http/ui/mod.ts", to: "src/store/store.ts" },
      { from: "src/pgwire/connection.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/pgwire/connection.ts", to: "src/store/shared/wire_types.ts" },
      { from: "src/pgwire/mod.ts", to: "src/http/observe.ts" },
      { from: "src/service/wire.ts", to: "src/pgwire/mod.ts" },
    ]).map((violation) => violation.slice(0, violation.indexOf(":"))),
    [
      "src/service/tables.ts imports src/http/routes/shapes.ts",
      "src/catalog/rows.ts imports src/store/store.ts",
      "src/ingest/spool.ts imports src/service/bodies.ts",
      "src/http/app.ts imports src/store/duckdb/mod.ts",
      "src/service/uploads.ts imports src/store/duckdb/rows.ts",
      "src/store/store.ts imports src/store/duckdb/rows.ts",
      "src/service/tables.ts imports src/store/postgres/types.ts",
      "src/store/duckdb/ddl.ts imports src/store/postgres/types.ts",
      "src/store/postgres/mod.ts imports src/store/duckdb/sql.ts",
      "src/store/postgres/uploads.ts imports src/store/duckdb/staging.ts",
      "src/store/duckdb/staging.ts imports src/store/postgres/mod.ts",
      "src/service/uploads.ts imports src/store/duckdb/mod.ts",
      "src/store/shared/cursor.ts imports src/store/duckdb/sql.ts",
      "src/store/shared/cursor.ts imports src/store/postgres/mod.ts",
      "src/http/ui/mod.ts imports src/service/tables.ts",
      "src/http/ui/mod.ts imports src/store/store.ts",
      "src/pgwire/connection.ts imports src/store/duckdb/mod.ts",
      "src/pgwire/connection.ts imports src/store/shared/wire_types.ts",
      "src/pgwire/mod.ts imports src/http/observe.ts",
      "src/service/wire.ts imports src/pgwire/mod.ts",
    ],
  );
  assert.deepEqual(
    layerViolations([
      { from: "src/store/postgres/result_formats.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/http/routes/rows.ts", to: "src/service/uploads.ts" },
      { from: "src/service/uploads.ts", to: "src/store/store.ts" },
      { from: "src/catalog/rows.ts", to: "src/ingest/json_rows_summary.ts" },
      { from: "main.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/server.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/store/duckdb/rows.ts", to: "src/store/duckdb/sql.ts" },
      { from: "tests/helpers/store.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/http/app_test.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/store/postgres/mod.ts", to: "src/store/postgres/types.ts" },
      { from: "src/store/postgres/types.ts", to: "src/catalog/types.ts" },
      { from: "src/store/postgres/types_test.ts", to: "tests/helpers/postgres.ts" },
      { from: "main.ts", to: "src/store/postgres/mod.ts" },
      { from: "src/store/postgres/uploads.ts", to: "src/store/duckdb/mod.ts" },
      { from: "src/store/duckdb/record_cursor.ts", to: "src/store/shared/cursor.ts" },
      { from: "src/store/postgres/record_cursor.ts", to: "src/store/shared/cursor.ts" },
      { from: "src/store/shared/cursor.ts", to: "src/catalog/filters.ts" },
      { from: "src/http/ui/mod.ts", to: "src/http/ui/packages.ts" },
      { from: "src/http/ui/mod.ts", to: "src/errors.ts" },
      { from: "src/http/app.ts", to: "src/http/ui/mod.ts" },
      { from: "src/pgwire/mod.ts", to: "src/service/wire.ts" },
      { from: "src/pgwire/auth.ts", to: "src/auth/jwt.ts" },
      { from: "src/server.ts", to: "src/pgwire/mod.ts" },
    ]),
    [],
  );
});

Deno.test("the source keeps its layers: http, then service, then catalog and ingest, then store", async () => {
  const imports = await projectImports();
  assert.ok(
    imports.some((i) => i.from.startsWith("src/http/") && i.to.startsWith("src/service/")),
    "the routes reach no service: is the graph read at all?",
  );
  assert.deepEqual(layerViolations(imports), []);
});
