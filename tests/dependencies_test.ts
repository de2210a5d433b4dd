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

/** The local modules `entry` loads, directly or through others, relative to the project. */
async function localGraph(entry: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--lock=deno.dev.lock", entry],
    cwd: ROOT,
    stderr: "inherit",
  }).output();
  assert.equal(output.code, 0, `deno info ${entry} failed`);
  const { modules } = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    modules: { specifier: string }[];
  };
  return modules.map((m) => m.specifier).filter((s) => s.startsWith(ROOT.href))
    .map((s) => s.slice(ROOT.href.length));
}

Deno.test("the load and token commands load no module of the store, so no database code", async () => {
  for (const entry of ["src/cli/load/mod.ts", "src/cli/token.ts"]) {
    const graph = await localGraph(entry);
    assert.ok(graph.includes(entry), graph.join(", "));
    assert.deepEqual(graph.filter((path) => path.startsWith("src/store/")), [], entry);
  }
});
