import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import type { Browser } from "npm:playwright-core@^1.65.1";
import { errorOf, ok, TestServer } from "./helpers/server.ts";
import { browserMissing, launchOffline } from "./helpers/ui.ts";

const SCREENSHOT = new URL("./tmp/docs.png", import.meta.url).pathname;

Deno.test("/docs: the reference page and its assets are served by the service", async (t) => {
  const server = await TestServer.start({});
  try {
    await t.step("the page is public HTML that loads only same-origin files", async () => {
      for (const path of ["/docs", "/docs/"]) {
        const page = await server.request("GET", path, { token: null });
        assert.equal(page.status, 200, path);
        assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
        assert.doesNotMatch(page.text, /(?:src|href)="(?:https?:)?\/\//, "no remote asset");
        const policy = page.headers.get("content-security-policy") ?? "";
        assert.match(policy, /default-src 'none'/);
        assert.match(policy, /script-src 'self'(?:;|$)/);
        const files = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
        assert.ok(files.length >= 4, `assets: ${files}`);
        for (const file of files) {
          const asset = await server.request("GET", file, { token: null });
          assert.equal(asset.status, 200, file);
          assert.ok(asset.text.length > 0, file);
        }
      }
    });

    await t.step("assets come from the swagger-ui-dist package, typed", async () => {
      const script = await server.request("GET", "/docs/assets/swagger-ui-bundle.js", {
        token: null,
      });
      assert.match(script.headers.get("content-type") ?? "", /^text\/javascript/);
      assert.ok(script.text.includes("SwaggerUIBundle"));
      const css = await server.request("GET", "/docs/assets/swagger-ui.css", { token: null });
      assert.match(css.headers.get("content-type") ?? "", /^text\/css/);
    });

    await t.step("nothing else of the package or the disk is reachable", async () => {
      for (
        const path of [
          "/docs/assets/package.json",
          "/docs/assets/..%2F..%2Fdeno.json",
          "/docs/assets/swagger-ui-bundle.js.map",
          "/docs/assets/constructor",
        ]
      ) {
        const answer = await server.request("GET", path, { token: null });
        errorOf(answer, 404);
      }
    });
  } finally {
    await server.dispose();
  }
});

const missing = await browserMissing();

Deno.test({
  name: `/docs in headless Chromium: the table operations render, offline${
    missing ? ` (skipped: ${missing})` : ""
  }`,
  ignore: missing !== undefined,
  async fn() {
    const server = await TestServer.start({});
    let browser: Browser | undefined;
    try {
      browser = await launchOffline();
      const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
      const elsewhere: string[] = [];
      const problems: string[] = [];
      await page.route("**/*", (route) => {
        const url = new URL(route.request().url());
        if (url.origin === server.base || url.protocol === "data:") return route.continue();
        elsewhere.push(url.href);
        return route.abort();
      });
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(`console: ${message.text()}`);
      });

      const answer = await page.goto(`${server.base}/docs`);
      assert.equal(answer?.status(), 200);
      // Swagger UI fetches the document and renders one block per operation.
      await page.locator(".opblock").first().waitFor({ timeout: 30_000 });
      const operations = await page.locator(".opblock-summary-path").allTextContents();
      const paths = operations.map((text) => text.replace(/\u200b/g, "").trim());
      for (
        const expected of [
          "/api/v1/table/{table_name}/upload/json",
          "/api/v1/table/{table_name}/upload/excel",
          "/api/v1/table/{table_name}/records",
          "/api/v1/table/{table_name}",
          "/api/v1/table_template",
        ]
      ) {
        assert.ok(paths.includes(expected), `${expected} not among ${paths.join(", ")}`);
      }
      const title = await page.locator(".info .title").textContent();
      assert.match(title ?? "", /Table service/);

      // Opening an operation shows its parameters, read from the document.
      await page.locator(".opblock-summary-path", { hasText: "/upload/json" }).first().click();
      await page.locator(".parameters-container").first().waitFor({ timeout: 10_000 });
      await page.getByText("if_exists").first().waitFor({ timeout: 10_000 });

      await Deno.mkdir(new URL("./tmp/", import.meta.url), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: false });
      const png = await Deno.readFile(SCREENSHOT);
      assert.deepEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47], "a PNG file");
      assert.ok(png.length > 10_000, `screenshot of ${png.length} bytes`);

      // The page works against the service: authorize with a token, then "Try it out".
      ok(await server.request("POST", "table/shown_in_docs", { body: {} }));
      await page.locator(".auth-wrapper .authorize").first().click();
      await page.locator(".modal-ux input").first().fill(server.token);
      await page.locator(".modal-ux .btn.modal-btn.auth.authorize").click();
      await page.locator(".modal-ux .btn-done").click();
      const listTables = page.locator(".opblock-get", {
        has: page.locator('.opblock-summary-path[data-path="/api/v1/table"]'),
      });
      await listTables.locator(".opblock-summary").click();
      await listTables.locator(".try-out__btn").click();
      await listTables.locator(".btn.execute").click();
      const live = listTables.locator(".live-responses-table .response");
      await live.first().waitFor({ timeout: 10_000 });
      assert.equal(
        (await live.locator(".response-col_status").first().textContent())?.trim(),
        "200",
      );
      assert.match(
        await live.locator(".microlight, pre").first().textContent() ?? "",
        /shown_in_docs/,
      );

      assert.deepEqual(elsewhere, [], "requests that left the service");
      assert.deepEqual(problems, []);
    } finally {
      await browser?.close();
      await server.dispose();
    }
  },
});
