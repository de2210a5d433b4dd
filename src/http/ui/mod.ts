/**
 * The web UI at `/ui`: one HTML page for every screen, its own scripts and style sheet from
 * `web/`, and the npm packages it loads from `node_modules`. Everything here is public; the
 * page calls the ordinary API with the bearer token the person pastes in.
 *
 * No build step: the browser loads the ES modules the packages ship, through an import map
 * in the page. The packages' files are minified with terser when first asked for (kept in
 * memory), which more than halves what the SQL editor transfers; the UI's own files are
 * served as written.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { etag } from "hono/etag";
import { ApiError } from "../../errors.ts";
import { importMap, packageAt } from "./packages.ts";

/** Where the UI is. */
export const UI_PATH = "/ui";

/** The screens, each a path of its own: `/ui/table?schema=public&table=people`. */
export const SCREENS = ["tables", "table", "sql", "templates", "import"] as const;

/** The UI's own files in `web/`, by the name they are served under. */
export const WEB_FILES: readonly string[] = [
  "api.js",
  "app.js",
  "chart.js",
  "columns_editor.js",
  "dialog.js",
  "editor.css",
  "editor.js",
  "grid.js",
  "icon.svg",
  "import.js",
  "main.js",
  "session.js",
  "sign_in.js",
  "sql.js",
  "table.js",
  "table_dialogs.js",
  "table_filters.js",
  "table_view.js",
  "tables.js",
  "templates.js",
  "ui.css",
  "view_state.js",
];

const TYPES: Readonly<Record<string, string>> = {
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

/** The import map, as the page carries it; its hash is in the policy. */
const IMPORT_MAP = JSON.stringify(importMap(`${UI_PATH}/npm`));
const IMPORT_MAP_HASH = createHash("sha256").update(IMPORT_MAP).digest("base64");

/**
 * The policy of every UI answer. The import map is the only inline script, allowed by its
 * hash; nothing is evaluated from text, and the page connects only to the service. Downloads
 * of charts and a chart drawn into a PNG use `blob:` images.
 */
export const UI_POLICY = [
  "default-src 'none'",
  `script-src 'self' 'sha256-${IMPORT_MAP_HASH}'`,
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Table service</title>
<link rel="icon" type="image/svg+xml" href="${UI_PATH}/assets/icon.svg">
<link rel="stylesheet" href="${UI_PATH}/assets/ui.css">
<script type="importmap">${IMPORT_MAP}</script>
<script type="module" src="${UI_PATH}/assets/main.js"></script>
</head>
<body>
<div id="app"><noscript>This page needs JavaScript; the API is at /docs.</noscript></div>
</body>
</html>
`;

const HTML_ANSWER = {
  description: "The UI's page (every screen is the same page; its script reads the URL)",
  content: { "text/html": { schema: z.string() } },
};
const NOT_FOUND = {
  description: "No such screen or file",
  content: { "application/json": { schema: z.object({ error: z.unknown() }) } },
};

const uiPage = createRoute({
  method: "get",
  operationId: "getUiPage",
  path: UI_PATH,
  summary: "The web UI: sign in with a token, then browse, query and change tables",
  tags: ["service"],
  security: [],
  responses: { 200: HTML_ANSWER },
});

const uiScreen = createRoute({
  method: "get",
  operationId: "getUiScreen",
  path: `${UI_PATH}/{screen}`,
  summary: "A screen of the web UI, its state in the query string",
  tags: ["service"],
  security: [],
  request: {
    params: z.object({
      screen: z.string().openapi({ enum: [...SCREENS], example: "table" }),
    }),
  },
  responses: { 200: HTML_ANSWER, 404: NOT_FOUND },
});

const uiAsset = createRoute({
  method: "get",
  operationId: "getUiAsset",
  path: `${UI_PATH}/assets/{file}`,
  summary: "A script, style sheet or icon of the web UI",
  tags: ["service"],
  security: [],
  request: {
    params: z.object({ file: z.string().openapi({ enum: [...WEB_FILES], example: "app.js" }) }),
  },
  responses: {
    200: {
      description: "The file",
      content: {
        "text/javascript": { schema: z.string() },
        "text/css": { schema: z.string() },
        "image/svg+xml": { schema: z.string() },
      },
    },
    404: NOT_FOUND,
  },
});

const uiPackageFile = createRoute({
  method: "get",
  operationId: "getUiPackageFile",
  path: `${UI_PATH}/npm/{package}/{file}`,
  summary: "A module of an npm package the web UI loads (from the service's node_modules)",
  tags: ["service"],
  security: [],
  request: {
    params: z.object({
      package: z.string().openapi({ example: "@codemirror+view" }),
      file: z.string().openapi({ example: "index.js" }),
    }),
  },
  responses: {
    200: { description: "The module", content: { "text/javascript": { schema: z.string() } } },
    404: NOT_FOUND,
  },
});

interface Served {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly etag: string;
}

function tagged(bytes: Uint8Array<ArrayBuffer>): Served {
  return { bytes, etag: `"${createHash("sha256").update(bytes).digest("base64url")}"` };
}

/** A package's module, minified: names mangled, its build mode set to production. */
async function minified(url: URL): Promise<Served> {
  // What a bundler's "define" does: packages written for bundlers test the build mode with
  // `process.env.NODE_ENV`, which a browser does not have.
  const text = (await Deno.readTextFile(url)).replaceAll("process.env.NODE_ENV", '"production"');
  // Loaded on the first request for a module, not at start-up: terser is a large module and
  // most starts never serve the UI.
  const { minify } = await import("terser");
  const { code } = await minify(text, { module: true, compress: false, mangle: true });
  if (code === undefined) throw new Error(`terser returned nothing for ${url.pathname}`);
  return tagged(new TextEncoder().encode(code));
}

/** The page, its screens, the UI's files and the packages' modules. */
export function uiRoutes(): OpenAPIHono {
  const app = new OpenAPIHono({ strict: false });
  app.use(`${UI_PATH}/*`, etag());
  app.use(UI_PATH, etag());
  // Each file read (and minified) once, on first use: nothing is loaded unless someone opens
  // the UI. A failed read is forgotten, so the next request tries again.
  const cache = new Map<string, Promise<Served>>();
  const once = (key: string, load: () => Promise<Served>): Promise<Served> => {
    let file = cache.get(key);
    if (file === undefined) {
      file = load();
      cache.set(key, file);
      file.catch(() => cache.delete(key));
    }
    return file;
  };
  const page = tagged(new TextEncoder().encode(PAGE));
  const headers = (type: string, served: Served) => ({
    "content-type": type,
    "content-security-policy": UI_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    // Revalidated on every load: the names stay the same across versions, the ETag does not.
    "cache-control": "no-cache",
    etag: served.etag,
  });
  const pageAnswer = () =>
    new Response(page.bytes, { status: 200, headers: headers("text/html; charset=utf-8", page) });

  app.openapi(uiPage, () => pageAnswer());
  app.openapi(uiScreen, (c) => {
    const screen = c.req.param("screen");
    if (!(SCREENS as readonly string[]).includes(screen)) {
      throw ApiError.notFound(`No screen "${screen}" in the UI`);
    }
    return pageAnswer();
  });
  app.openapi(uiAsset, async (c) => {
    const name = c.req.param("file");
    if (!WEB_FILES.includes(name)) throw ApiError.notFound(`No UI file "${name}"`);
    const served = await once(
      `web/${name}`,
      async () => tagged(await Deno.readFile(new URL(`./web/${name}`, import.meta.url))),
    );
    return c.body(served.bytes, 200, headers(TYPES[name.split(".").pop()!]!, served));
  });
  app.openapi(uiPackageFile, async (c) => {
    const segment = c.req.param("package");
    const name = c.req.param("file");
    const found = packageAt(segment);
    // One plain file name of the entry's folder: no path, no hidden file, a module only.
    if (found === undefined || !/^[A-Za-z0-9_-][A-Za-z0-9_.-]*\.m?js$/.test(name)) {
      throw ApiError.notFound(`No UI module "${segment}/${name}"`);
    }
    const url = new URL(`../../../node_modules/${found.dir}/${name}`, import.meta.url);
    let served: Served;
    try {
      served = await once(`npm/${found.dir}/${name}`, () => minified(url));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw ApiError.notFound(`No UI module "${segment}/${name}"`);
      }
      throw error;
    }
    return c.body(served.bytes, 200, headers(TYPES.js!, served));
  });
  return app;
}
