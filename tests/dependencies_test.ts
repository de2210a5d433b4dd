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
