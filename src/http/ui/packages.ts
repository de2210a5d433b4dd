/**
 * The npm packages the web UI loads in the browser, served from `node_modules` as the ES
 * modules they ship, each under `/ui/npm/<name>/<file>` where `<name>` is the import's
 * specifier with `/` written `+`. The page's import map names each entry file, so the
 * browser resolves the packages' own bare imports (`from "@codemirror/state"`) to the same
 * URLs; a package's relative imports stay inside its entry's folder, which is all that is
 * served of it.
 *
 * @module
 */

/** One import specifier the browser may use, and where its files are. */
export interface BrowserPackage {
  /** The specifier the browser imports (`preact/hooks`). */
  readonly specifier: string;
  /** The folder of its entry file, relative to `node_modules/`. */
  readonly dir: string;
  /** Its entry file in that folder. */
  readonly entry: string;
}

/**
 * Every module the UI may load, pinned in `deno.json` (and so in `deno.lock`). The first
 * screen needs Preact, htm and the virtual grid; the SQL editor (CodeMirror) is loaded when
 * the SQL screen opens.
 */
export const BROWSER_PACKAGES: readonly BrowserPackage[] = [
  { specifier: "preact", dir: "preact/dist", entry: "preact.mjs" },
  { specifier: "preact/hooks", dir: "preact/hooks/dist", entry: "hooks.mjs" },
  { specifier: "htm", dir: "htm/dist", entry: "htm.module.js" },
  { specifier: "htm/preact", dir: "htm/preact", entry: "index.module.js" },
  {
    specifier: "@tanstack/virtual-core",
    dir: "@tanstack/virtual-core/dist/esm",
    entry: "index.js",
  },
  { specifier: "@codemirror/state", dir: "@codemirror/state/dist", entry: "index.js" },
  { specifier: "@codemirror/view", dir: "@codemirror/view/dist", entry: "index.js" },
  { specifier: "@codemirror/language", dir: "@codemirror/language/dist", entry: "index.js" },
  {
    specifier: "@codemirror/streamparser",
    dir: "@codemirror/streamparser/dist",
    entry: "index.js",
  },
  {
    specifier: "@codemirror/autocomplete",
    dir: "@codemirror/autocomplete/dist",
    entry: "index.js",
  },
  { specifier: "@codemirror/commands", dir: "@codemirror/commands/dist", entry: "index.js" },
  { specifier: "@codemirror/lang-sql", dir: "@codemirror/lang-sql/dist", entry: "index.js" },
  { specifier: "@lezer/common", dir: "@lezer/common/dist", entry: "index.js" },
  { specifier: "@lezer/lr", dir: "@lezer/lr/dist", entry: "index.js" },
  { specifier: "@lezer/highlight", dir: "@lezer/highlight/dist", entry: "index.js" },
  {
    specifier: "@marijn/find-cluster-break",
    dir: "@marijn/find-cluster-break/src",
    entry: "index.js",
  },
  { specifier: "style-mod", dir: "style-mod/src", entry: "style-mod.js" },
  { specifier: "w3c-keyname", dir: "w3c-keyname", entry: "index.js" },
  { specifier: "crelt", dir: "crelt", entry: "index.js" },
];

/** The URL segment a specifier is served under: `@codemirror/view` is `@codemirror+view`. */
export function packageSegment(specifier: string): string {
  return specifier.replaceAll("/", "+");
}

/**
 * The page's import map: each specifier to its entry file's URL under `prefix`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { importMap } from "./packages.ts";
 *
 * const map = importMap("/ui/npm");
 * assert.equal(map.imports["preact/hooks"], "/ui/npm/preact+hooks/hooks.mjs");
 * ```
 */
export function importMap(prefix: string): { imports: Record<string, string> } {
  return {
    imports: Object.fromEntries(
      BROWSER_PACKAGES.map((
        p,
      ) => [p.specifier, `${prefix}/${packageSegment(p.specifier)}/${p.entry}`]),
    ),
  };
}

/** The package served under `segment`, if any. */
export function packageAt(segment: string): BrowserPackage | undefined {
  return BROWSER_PACKAGES.find((p) => packageSegment(p.specifier) === segment);
}
