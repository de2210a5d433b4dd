import assert from "node:assert/strict";
import { appOver } from "../../../tests/helpers/app.ts";
import type { Store } from "../../store/store.ts";
import { BROWSER_PACKAGES, importMap } from "./packages.ts";
import { SCREENS, UI_POLICY, WEB_FILES } from "./mod.ts";

const ROOT = new URL("../../../", import.meta.url);

async function gunzipped(response: Response): Promise<{ text: string; gzipBytes: number }> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  const text = await new Response(
    new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")),
  ).text();
  return { text, gzipBytes: bytes.length };
}

Deno.test("uiRoutes(): the page of every screen is public HTML under the strict policy", async () => {
  const app = await appOver({} as Store);
  for (const path of ["/ui", "/ui/", ...SCREENS.map((s) => `/ui/${s}`)]) {
    const answer = await app.request(path);
    assert.equal(answer.status, 200, path);
    assert.match(answer.headers.get("content-type") ?? "", /^text\/html/);
    assert.equal(answer.headers.get("content-security-policy"), UI_POLICY);
    const page = await answer.text();
    assert.doesNotMatch(page, /(?:src|href)="(?:https?:)?\/\//, "no remote asset");
    // The only inline script is the import map, allowed by its hash, never as 'unsafe-inline'.
    assert.equal([...page.matchAll(/<script(?![^>]*\ssrc=)/g)].length, 1);
    assert.match(page, /<script type="importmap">/);
  }
  assert.match(UI_POLICY, /script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
  assert.match(UI_POLICY, /connect-src 'self'(;|$)/);
  assert.match(UI_POLICY, /style-src 'self'(;|$)/);
  assert.doesNotMatch(UI_POLICY, /unsafe-inline|unsafe-eval/);
});

Deno.test("uiRoutes(): / redirects to /ui, and an unknown screen is 404", async () => {
  const app = await appOver({} as Store);
  const root = await app.request("/");
  assert.equal(root.status, 302);
  assert.equal(root.headers.get("location"), "/ui");
  assert.equal((await app.request("/ui/nothing")).status, 404);
});

Deno.test("uiRoutes(): files revalidate with their ETag (304) and are gzipped", async () => {
  const app = await appOver({} as Store);
  for (const path of ["/ui/assets/app.js", "/ui/npm/preact/preact.mjs", "/ui"]) {
    const first = await app.request(path, { headers: { "accept-encoding": "gzip" } });
    assert.equal(first.status, 200, path);
    const tag = first.headers.get("etag");
    assert.ok(tag, path);
    await first.body?.cancel();
    const again = await app.request(path, {
      headers: { "accept-encoding": "gzip", "if-none-match": tag },
    });
    assert.equal(again.status, 304, path);
  }
  const script = await app.request("/ui/assets/grid.js", {
    headers: { "accept-encoding": "gzip" },
  });
  assert.equal(script.headers.get("content-encoding"), "gzip");
  assert.match(script.headers.get("content-type") ?? "", /^text\/javascript/);
  assert.match((await gunzipped(script)).text, /export function Grid/);
});

Deno.test("uiRoutes(): a package's module is served minified, in production mode", async () => {
  const app = await appOver({} as Store);
  const answer = await app.request("/ui/npm/@tanstack+virtual-core/index.js");
  assert.equal(answer.status, 200);
  const text = await answer.text();
  const original = await Deno.readTextFile(
    new URL("node_modules/@tanstack/virtual-core/dist/esm/index.js", ROOT),
  );
  assert.ok(text.length < original.length * 0.8, `${text.length} of ${original.length}`);
  assert.doesNotMatch(text, /process\.env/);
  assert.match(text, /Virtualizer/);
  // Its relative imports resolve beside it.
  assert.equal((await app.request("/ui/npm/@tanstack+virtual-core/utils.js")).status, 200);
});

Deno.test("uiRoutes(): nothing else of node_modules or the disk is reachable", async () => {
  const app = await appOver({} as Store);
  for (
    const path of [
      "/ui/npm/preact/package.json",
      "/ui/npm/preact/..%2F..%2Fpackage.json",
      "/ui/npm/hono/index.js",
      "/ui/npm/preact/.hidden.js",
      "/ui/npm/jose/index.js",
      "/ui/assets/mod.ts",
      "/ui/assets/..%2Fmod.ts",
      "/ui/assets/constructor",
      "/ui/npm/constructor/index.js",
    ]
  ) {
    const answer = await app.request(path);
    assert.equal(answer.status, 404, path);
    await answer.body?.cancel();
  }
});

Deno.test("WEB_FILES lists every file of web/, and the compile task includes them and the packages", async () => {
  const files: string[] = [];
  for await (const entry of Deno.readDir(new URL("./web/", import.meta.url))) {
    files.push(entry.name);
  }
  assert.deepEqual(files.sort(), [...WEB_FILES].sort());
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const words = (config.tasks.compile as string).split(/\s+/);
  const included = words.filter((_, i) => words[i - 1] === "--include");
  assert.ok(included.includes("src/http/ui/web"), included.join(" "));
  for (const p of BROWSER_PACKAGES) {
    assert.ok(included.includes(`node_modules/${p.dir}`), `${p.dir} is not included`);
    // Pinned: the import map of deno.json names the package at one exact version.
    const name = p.specifier.startsWith("@")
      ? p.specifier.split("/").slice(0, 2).join("/")
      : p.specifier.split("/")[0]!;
    assert.match(config.imports[name] ?? "", /^npm:[^@]*@?[^@]+@\d+\.\d+\.\d+$/, name);
  }
});

Deno.test("importMap() names every package the UI's own modules import", async () => {
  const mapped = new Set(Object.keys(importMap("/ui/npm").imports));
  const bare = new Set<string>();
  for (const file of WEB_FILES.filter((f) => f.endsWith(".js"))) {
    const text = await Deno.readTextFile(new URL(`./web/${file}`, import.meta.url));
    const found = [
      ...text.matchAll(/^import [^;]*?from "([^"]+)";$/gms),
      ...text.matchAll(/\bimport\("([^"]+)"\)/g),
    ];
    assert.ok(found.length > 0 || !/^import /m.test(text), file);
    for (const [, specifier] of found) {
      if (!specifier!.startsWith(".")) bare.add(specifier!);
    }
  }
  for (const specifier of bare) assert.ok(mapped.has(specifier), `${specifier} is not mapped`);
});
