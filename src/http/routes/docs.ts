/**
 * The API reference page at `/docs`: Swagger UI rendering `/api/v1/openapi.json`.
 *
 * Every asset comes from the `swagger-ui-dist` npm package and is served by the service, so
 * the page works without a network; its Content-Security-Policy allows nothing from
 * elsewhere.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { etag } from "hono/etag";
import { ApiError } from "../../errors.ts";
import { ErrorShape } from "./shapes.ts";

/** Where the page is. */
const DOCS_PATH = "/docs";

/** The package's files the page loads, by the name they are served under. */
const ASSETS: Readonly<Record<string, { file: string; type: string }>> = {
  "swagger-ui.css": { file: "swagger-ui.css", type: "text/css; charset=utf-8" },
  "swagger-ui-bundle.js": {
    file: "swagger-ui-bundle.js",
    type: "text/javascript; charset=utf-8",
  },
  "favicon.png": { file: "favicon-32x32.png", type: "image/png" },
};

const POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  // Swagger UI sets style attributes on its elements.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const page = (specUrl: string) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Table service API</title>
<link rel="icon" type="image/png" href="${DOCS_PATH}/assets/favicon.png">
<link rel="stylesheet" href="${DOCS_PATH}/assets/swagger-ui.css">
</head>
<body>
<div id="api-reference" data-spec-url="${specUrl}"></div>
<script src="${DOCS_PATH}/assets/swagger-ui-bundle.js"></script>
<script src="${DOCS_PATH}/init.js"></script>
</body>
</html>
`;

// A file of its own rather than an inline script, so the policy can forbid inline scripts.
const INIT = `"use strict";
const root = document.getElementById("api-reference");
window.ui = SwaggerUIBundle({
  url: root.dataset.specUrl,
  domNode: root,
  deepLinking: true,
  persistAuthorization: false,
  // The default sends the document to an online validator; this page stays offline.
  validatorUrl: null,
});
`;

const docsPage = createRoute({
  method: "get",
  operationId: "getDocsPage",
  path: DOCS_PATH,
  summary: "The API reference page, rendering the OpenAPI document (works offline)",
  tags: ["service"],
  security: [],
  responses: {
    200: { description: "An HTML page", content: { "text/html": { schema: z.string() } } },
  },
});

const docsInit = createRoute({
  method: "get",
  operationId: "getDocsScript",
  path: `${DOCS_PATH}/init.js`,
  summary: "The reference page's start-up script",
  tags: ["service"],
  security: [],
  responses: {
    200: {
      description: "JavaScript",
      content: { "text/javascript": { schema: z.string() } },
    },
  },
});

const docsAsset = createRoute({
  method: "get",
  operationId: "getDocsAsset",
  path: `${DOCS_PATH}/assets/{file}`,
  summary: "A file of the reference page, from the swagger-ui-dist package",
  tags: ["service"],
  security: [],
  request: {
    params: z.object({
      file: z.string().openapi({ enum: Object.keys(ASSETS), example: "swagger-ui.css" }),
    }),
  },
  responses: {
    200: {
      description: "The file",
      content: {
        "text/css": { schema: z.string() },
        "text/javascript": { schema: z.string() },
        "image/png": { schema: z.string().openapi({ format: "binary" }) },
      },
    },
    404: {
      description: "No such file",
      content: { "application/json": { schema: ErrorShape } },
    },
  },
});

/** A file's bytes and a strong ETag of them. */
async function readWithTag(url: URL): Promise<{ bytes: Uint8Array<ArrayBuffer>; etag: string }> {
  const bytes = await Deno.readFile(url) as Uint8Array<ArrayBuffer>;
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-1", bytes));
  return { bytes, etag: `"${Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("")}"` };
}

/** The reference page, its script and its assets; `specUrl` is the document it renders. */
export function docsRoutes(specUrl: string): OpenAPIHono {
  const app = new OpenAPIHono({ strict: false });
  // The asset names stay the same across package versions: browsers revalidate each time and
  // get a 304 while the bytes are unchanged.
  app.use(`${DOCS_PATH}/*`, etag());
  // Each file with its ETag, hashed once here: etag() would hash the 1.5 MB bundle again
  // on every request.
  const files = new Map<string, Promise<{ bytes: Uint8Array<ArrayBuffer>; etag: string }>>();
  const html = page(specUrl);
  const headers = (type: string) => ({
    "content-type": type,
    "content-security-policy": POLICY,
    "x-content-type-options": "nosniff",
  });

  app.openapi(docsPage, (c) => c.body(html, 200, headers("text/html; charset=utf-8")));
  app.openapi(docsInit, (c) => c.body(INIT, 200, headers("text/javascript; charset=utf-8")));
  app.openapi(docsAsset, async (c) => {
    const name = c.req.param("file");
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (asset === undefined) throw ApiError.notFound(`No documentation file "${name}"`);
    // Read once, on first use: nothing is loaded unless someone opens the page.
    let file = files.get(asset.file);
    if (file === undefined) {
      file = readWithTag(new URL(import.meta.resolve(`swagger-ui-dist/${asset.file}`)));
      files.set(asset.file, file);
      file.catch(() => files.delete(asset.file));
    }
    const { bytes, etag } = await file;
    return c.body(bytes, 200, { ...headers(asset.type), "cache-control": "no-cache", etag });
  });
  return app;
}
