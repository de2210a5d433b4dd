/**
 * The web UI in headless Chromium against a real service: every screen it has, its URL
 * state, the XSS cases, a read-only token, the network unplugged, and axe in both themes.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as XLSX from "xlsx";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import type { Browser, Page } from "npm:playwright-core@^1.65.1";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import { AxeBuilder } from "npm:@axe-core/playwright@4.14.0";
import { mint, ok, TestServer, uploadForm } from "./helpers/server.ts";
import { ENGINE } from "./helpers/engine.ts";
import { browserMissing, launchOffline, signIn, type Watch, watch } from "./helpers/ui.ts";

const BIG_ROWS = 1_000_000;
const XSS = "<img src=x onerror=alert(1)>";
const SCRIPT_END = "</script><script>alert(2)</script>";
const JS_URL = "javascript:alert(3)";

/** Polls `check` until it stops throwing (or throws its last failure after `ms`). */
async function eventually<T>(check: () => T | Promise<T>, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The tables the tests read: one of a million rows, one without a key, one of hostile text. */
async function loadTables(server: TestServer): Promise<void> {
  const lines = ["id,label,value"];
  for (let id = 1; id <= BIG_ROWS; id++) lines.push(`${id},label-${id % 1000},${(id % 997) / 10}`);
  ok(
    await server.request("POST", "table/big/upload/csv", {
      body: uploadForm(new TextEncoder().encode(lines.join("\n")), "big.csv", {
        table: {
          columns: [
            { name: "id", type: "INTEGER", is_nullable: false },
            { name: "label", type: "VARCHAR" },
            { name: "value", type: "DOUBLE" },
          ],
          constraints: { primary_key: { columns: ["id"] } },
        },
      }),
    }),
  );
  ok(
    await server.request("POST", "table/people/upload/json", {
      body: {
        table: {
          columns: [
            { name: "id", type: "INTEGER", is_nullable: false },
            { name: "name", type: "VARCHAR" },
            { name: "city", type: "VARCHAR" },
          ],
          constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["name"] }] },
        },
        data: [
          { id: 1, name: "Ada", city: "London" },
          { id: 2, name: "Grace", city: "New York" },
          { id: 3, name: "Edsger", city: "Nuenen" },
          { id: 4, name: "Barbara", city: "Boston" },
          { id: 5, name: "Donald", city: "Stanford" },
        ],
      },
    }),
  );
  ok(
    await server.request("POST", "table/events/upload/json", {
      body: {
        table: { columns: [{ name: "n", type: "INTEGER" }, { name: "what", type: "VARCHAR" }] },
        data: Array.from({ length: 250 }, (_, i) => ({ n: 1000 - i, what: `event ${i}` })),
      },
    }),
  );
  ok(
    await server.request("POST", "table/hostile/upload/json", {
      body: {
        table: {
          columns: [
            { name: "id", type: "INTEGER", is_nullable: false },
            { name: XSS, type: "VARCHAR" },
            { name: "</script>", type: "VARCHAR" },
          ],
          constraints: { primary_key: { columns: ["id"] } },
        },
        data: [
          { id: 1, [XSS]: XSS, "</script>": SCRIPT_END },
          { id: 2, [XSS]: JS_URL, "</script>": JS_URL },
        ],
      },
    }),
  );
}

/** The view's rows as the grid shows them: the text of each cell, row by row. */
async function gridRows(page: Page, label: string): Promise<string[][]> {
  const grid = page.getByRole("grid", { name: label });
  return await grid.locator(".grid-body [role=row]").evaluateAll((rows) =>
    rows
      .map((row) => ({
        y: Number(
          /translateY\((-?[\d.]+)px\)/.exec(
            (row as unknown as { style: { transform: string } }).style.transform,
          )?.[1],
        ),
        cells: [...row.querySelectorAll("[role=gridcell]:not(.select)")].map((c) =>
          c.textContent ?? ""
        ),
      }))
      .sort((a, b) => a.y - b.y)
      .map((r) => r.cells)
  );
}

/** axe's serious and critical findings on the page as it is. */
async function axeProblems(page: Page, seen: Watch): Promise<string[]> {
  seen.quiet = true;
  const result = await new AxeBuilder({ page }).analyze().finally(() => seen.quiet = false);
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

Deno.test("the service prints the web UI's address beside the token it generates, and the address answers", async () => {
  const server = await TestServer.start({ AUTH_JWT_SECRET: "" });
  try {
    const lines = server.stdout.split("\n");
    const at = lines.findIndex((line) => line.startsWith("The web UI: "));
    assert.ok(at >= 0, server.stdout);
    const address = lines[at]!.slice("The web UI: ".length);
    assert.equal(address, `http://127.0.0.1:${server.port}/ui`);
    // Beside the token: the lines that follow say it and give it.
    assert.match(lines.slice(at + 1).join("\n"), /web UI to sign in\):\neyJ/);
    const page = await fetch(address);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="\/ui\/assets\/main.js">/);
  } finally {
    await server.dispose();
  }
});

/**
 * The page is the same whichever engine keeps the tables, so the suite's PostgreSQL run, which
 * runs every HTTP test file again, leaves this one to the DuckDB run: loading a million rows and
 * driving a browser a second time would buy the API's engine tests nothing.
 */
const missing = ENGINE === "postgres"
  ? "the suite's PostgreSQL run; the page is the same on both engines"
  : await browserMissing();

Deno.test({
  name: `web UI in headless Chromium: every screen, offline, safe, accessible${
    missing ? ` (skipped: ${missing})` : ""
  }`,
  ignore: missing !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const server = await TestServer.start({});
    let browser: Browser | undefined;
    try {
      await loadTables(server);
      const readOnly = await mint({ scope: "tables:read templates:read" });
      browser = await launchOffline();
      const context = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        acceptDownloads: true,
      });
      const page = await context.newPage();
      const seen: Watch = await watch(page, server.base);

      await t.step(
        "the first screen is public, under 300 KB gzipped, all from the service",
        async () => {
          let bytes = 0;
          const counted: Promise<void>[] = [];
          const onFinished = (request: import("npm:playwright-core@^1.65.1").Request) => {
            counted.push(
              request.sizes().then((s) => {
                bytes += s.responseBodySize + s.responseHeadersSize;
              }),
            );
          };
          page.on("requestfinished", onFinished);
          const answer = await page.goto(`${server.base}/`);
          assert.equal(new URL(page.url()).pathname, "/ui");
          assert.match(
            (await answer?.allHeaders())?.["content-security-policy"] ?? "",
            /script-src 'self'/,
          );
          await page.locator("#token").waitFor();
          await page.waitForLoadState("networkidle");
          await Promise.all(counted);
          page.off("requestfinished", onFinished);
          assert.ok(bytes > 5_000, `${bytes} bytes: were the scripts counted?`);
          assert.ok(bytes <= 300 * 1024, `the first screen transferred ${bytes} bytes`);
          console.log(`first screen: ${(bytes / 1024).toFixed(1)} KB transferred`);
        },
      );

      await t.step("a bad or expired token is refused, saying so; none is kept", async () => {
        await page.locator("#token").fill("not a token");
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("alert").filter({ hasText: "not a token" }).waitFor();
        const expired = await mint({ scope: "tables:read", expiresIn: -3600 });
        await page.locator("#token").fill(expired);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("alert").filter({ hasText: "expired" }).waitFor();
        const forged = await mint({ scope: "tables:read", secret: "another-secret-".repeat(4) });
        await page.locator("#token").fill(forged);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("alert").filter({ hasText: "refused" }).waitFor();
        assert.equal(await page.evaluate(() => sessionStorage.length), 0);
      });

      await t.step("sign-in keeps the token in sessionStorage only, never in a URL", async () => {
        const urls: string[] = [];
        page.on("request", (r) => urls.push(r.url()));
        await signIn(page, server.base, server.token);
        assert.equal(await page.evaluate(() => localStorage.getItem("table-service-token")), null);
        assert.equal(
          await page.evaluate(() => sessionStorage.getItem("table-service-token")),
          server.token,
        );
        assert.ok(urls.length > 0);
        assert.ok(urls.every((u) => !u.includes(server.token)), "the token went into a URL");
        assert.ok(!server.stderr.includes(server.token), "the token went into the log");
      });

      await t.step("tables: schemas, tables and their row counts", async () => {
        const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: "big" }) });
        await eventually(async () =>
          assert.equal((await row.getByRole("cell").nth(1).textContent())?.trim(), "1,000,000")
        );
        const events = page.getByRole("row").filter({
          has: page.getByRole("link", { name: "events" }),
        });
        await eventually(async () =>
          assert.equal((await events.getByRole("cell").nth(1).textContent())?.trim(), "250")
        );
      });

      await t.step("create and drop a schema", async () => {
        await page.getByRole("button", { name: "New schema" }).click();
        await page.getByLabel("Name").fill("sales");
        await page.getByRole("button", { name: "Create schema" }).click();
        await page.getByRole("heading", { name: "sales", level: 2, exact: true }).waitFor();
        assert.ok(
          ok(await server.request("GET", "schema")).schemas.some((s: { name: string }) =>
            s.name === "sales"
          ),
        );
        await page.getByRole("button", { name: "Drop schema sales" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Drop schema" }).click();
        await page.getByRole("heading", { name: "sales", level: 2, exact: true }).waitFor({
          state: "detached",
        });
        assert.ok(
          !ok(await server.request("GET", "schema")).schemas.some((s: { name: string }) =>
            s.name === "sales"
          ),
        );
      });

      await t.step("create a table from columns, and from a template", async () => {
        await page.getByRole("button", { name: "New table" }).click();
        const dialog = page.getByRole("dialog");
        await dialog.getByLabel("Name", { exact: true }).fill("made_here");
        await dialog.getByRole("button", { name: "Add column" }).click();
        await dialog.getByLabel("Name of column 2").fill("title");
        await dialog.getByLabel("Type of column 2").fill("VARCHAR(40)");
        await dialog.getByRole("button", { name: "Create table" }).click();
        await page.getByRole("heading", { name: /made_here/ }).waitFor();
        const made = ok(await server.request("GET", "table/made_here")).table;
        assert.deepEqual(made.columns.map((c: { name: string }) => c.name), ["id", "title"]);
        assert.deepEqual(made.constraints.primary_key.columns, ["id"]);

        ok(
          await server.request("POST", "table_template/contact", {
            body: {
              table_template: { columns: [{ name: "email", type: "VARCHAR" }] },
              version: "1.0",
            },
          }),
        );
        await page.getByRole("link", { name: "Tables" }).first().click();
        await page.getByRole("button", { name: "New table" }).click();
        await dialog.getByLabel("Name", { exact: true }).fill("from_template");
        await dialog.getByLabel("a template").check();
        await dialog.getByRole("option", { name: "contact" }).waitFor({ state: "attached" });
        await dialog.getByRole("button", { name: "Create table" }).click();
        await page.getByRole("heading", { name: /from_template/ }).waitFor();
        const templated = ok(await server.request("GET", "table/from_template")).table;
        assert.deepEqual(templated.template, { name: "contact", version: "1.0" });
      });

      await t.step(
        "table view: the first rows of a million at once, more as it scrolls",
        async () => {
          await page.goto(`${server.base}/ui/table?schema=public&table=big`);
          const grid = page.getByRole("grid", { name: "Rows of big" });
          await grid.getByRole("gridcell", { name: "1", exact: true }).first().waitFor();
          const first = await gridRows(page, "Rows of big");
          assert.deepEqual(first[0], ["1", "label-1", "0.1"]);
          const pages: string[] = [];
          page.on("request", (r) => {
            if (r.url().includes("/records?") && /after=[^&]/.test(r.url())) pages.push(r.url());
          });
          for (let i = 0; i < 6; i++) {
            await grid.evaluate((el) => el.scrollTop = el.scrollHeight);
            await page.waitForTimeout(150);
          }
          await eventually(() => assert.ok(pages.length >= 1, "no next page was read"));
          await eventually(async () => {
            const rows = await gridRows(page, "Rows of big");
            assert.ok(Number(rows.at(-1)?.[0]) > 200, `last row shown: ${rows.at(-1)}`);
          });

          // Fifty screens down, a screen at a time: at most one page asked for per screen, and
          // the rows in view are the table's, in order, without a gap.
          await page.goto(`${server.base}/ui/table?schema=public&table=big`);
          await grid.getByRole("gridcell", { name: "1", exact: true }).first().waitFor();
          const asked: string[] = [];
          const onRequest = (r: { url(): string }) => {
            if (r.url().includes("/records?") && r.url().includes("count=none")) {
              asked.push(r.url());
            }
          };
          page.on("request", onRequest);
          const screen = await grid.evaluate((el) => el.clientHeight);
          for (let i = 0; i < 50; i++) {
            await grid.evaluate((el, by) => el.scrollTop += by, screen);
            await page.waitForTimeout(40);
          }
          await page.waitForLoadState("networkidle");
          page.off("request", onRequest);
          assert.ok(
            asked.length >= 1 && asked.length <= 50,
            `${asked.length} pages for 50 screens`,
          );
          await eventually(async () => {
            const ids = (await gridRows(page, "Rows of big")).map((r) => Number(r[0]));
            assert.ok(ids[0]! > 50 * Math.floor(screen / 40), `at row ${ids[0]} after 50 screens`);
            ids.forEach((id, i) => assert.equal(id, ids[0]! + i, `rows ${ids.join(",")}`));
          });
          console.log(`50 screens of ${screen} px: ${asked.length} pages asked for`);
        },
      );

      await t.step("table view: the last rows, the order reversed", async () => {
        await page.getByRole("button", { name: "Last rows" }).click();
        await eventually(async () =>
          assert.deepEqual((await gridRows(page, "Rows of big"))[0], [
            String(BIG_ROWS),
            `label-${BIG_ROWS % 1000}`,
            String((BIG_ROWS % 997) / 10),
          ])
        );
        assert.match(page.url(), /[?&]end=1/);
        await page.getByRole("button", { name: "First rows" }).click();
      });

      await t.step(
        "table view: sort, filter and columns live in the URL, and a reload keeps them",
        async () => {
          const grid = page.getByRole("grid", { name: "Rows of big" });
          await grid.getByRole("button", { name: /^value/ }).click();
          await eventually(() => assert.match(page.url(), /order=value\.asc/));
          await grid.getByRole("button", { name: /^value/ }).click();
          await eventually(() => assert.match(page.url(), /order=value\.desc/));
          assert.equal(
            await grid.getByRole("columnheader", { name: /^value/ }).getAttribute("aria-sort"),
            "descending",
          );
          // "/" goes to the filter bar.
          await grid.focus();
          await page.keyboard.press("/");
          assert.equal(await page.evaluate("document.activeElement?.id"), "filter-column");
          await page.selectOption("#filter-column", "label");
          await page.selectOption("#filter-op", "eq");
          await page.locator("#filter-value").fill("label-7");
          await page.getByRole("button", { name: "Filter", exact: true }).click();
          await eventually(() => assert.match(page.url(), /f\.label=eq\.label-7/));
          await page.getByRole("button", { name: "Columns", exact: true }).click();
          await page.getByRole("dialog").getByLabel("label").uncheck();
          await page.getByRole("button", { name: "Show these" }).click();
          await eventually(() => assert.match(page.url(), /select=id%2Cvalue|select=id,value/));

          const expected = ok(
            await server.request(
              "GET",
              "table/big/records?order=value.desc&label=eq.label-7&select=id,value&limit=3",
            ),
          );
          const want = expected.records.map((
            r: Record<string, unknown>,
          ) => [String(r.id), String(r.value)]);
          await eventually(async () =>
            assert.deepEqual((await gridRows(page, "Rows of big")).slice(0, 3), want)
          );
          await eventually(async () =>
            assert.match(
              await page.getByRole("status").filter({ hasText: "rows" }).first().textContent() ??
                "",
              new RegExp(`${expected.total.toLocaleString("en")} matching rows`),
            )
          );
          const url = page.url();
          await page.reload();
          await eventually(async () =>
            assert.deepEqual((await gridRows(page, "Rows of big")).slice(0, 3), want)
          );
          assert.equal(page.url(), url);
          await page.getByRole("listitem").filter({ hasText: "label eq.label-7" }).waitFor();
        },
      );

      await t.step("Copy as curl gives the API call that returns the same rows", async () => {
        await page.getByRole("button", { name: "Copy as curl" }).click();
        const curl = await page.locator("[data-curl]").inputValue();
        assert.match(curl, /^curl -sS -H "Authorization: Bearer \$TOKEN" '/);
        assert.ok(!curl.includes(server.token));
        const url = /'(http[^']+)'$/.exec(curl)?.[1];
        assert.ok(url, curl);
        const answer = await fetch(url, { headers: { authorization: `Bearer ${server.token}` } });
        const body = await answer.json();
        const shown = (await gridRows(page, "Rows of big")).slice(0, 5);
        assert.deepEqual(
          body.records.slice(0, 5).map((
            r: Record<string, unknown>,
          ) => [String(r.id), String(r.value)]),
          shown,
        );
        // Esc closes a dialog.
        await page.keyboard.press("Escape");
        await page.getByRole("dialog").waitFor({ state: "detached" });
      });

      await t.step("keyboard: arrows move the active cell of the grid", async () => {
        const grid = page.getByRole("grid", { name: "Rows of big" });
        await grid.focus();
        const before = await grid.getAttribute("aria-activedescendant");
        await page.keyboard.press("ArrowDown");
        await page.keyboard.press("ArrowRight");
        const after = await grid.getAttribute("aria-activedescendant");
        assert.ok(before && after && before !== after, `${before} → ${after}`);
        assert.match(after, /-1-1$/);
        // Up from the first row is the header, where Enter sorts.
        await page.keyboard.press("ArrowUp");
        await page.keyboard.press("ArrowUp");
        assert.match(await grid.getAttribute("aria-activedescendant") ?? "", /-h-1$/);
        await page.keyboard.press("Enter");
        await eventually(() => assert.equal(new URL(page.url()).searchParams.get("order"), null));
        await page.keyboard.press("Enter");
        await eventually(() =>
          assert.equal(new URL(page.url()).searchParams.get("order"), "value.asc")
        );
      });

      await t.step(
        "exports: every row of the view to a file, through a single-use ticket",
        async () => {
          const view = new URL(page.url()).searchParams;
          const urls: string[] = [];
          const onRequest = (r: { url(): string }) => urls.push(r.url());
          page.on("request", onRequest);
          await page.getByRole("button", { name: "Export" }).click();
          const dialog = page.getByRole("dialog");
          const [csv] = await Promise.all([
            page.waitForEvent("download"),
            dialog.getByRole("button", { name: "Download" }).click(),
          ]);
          assert.match(csv.suggestedFilename(), /^big_\d{8}_\d{6}\.csv$/);
          const expected = await server.request(
            "GET",
            `table/big/records/csv?order=${view.get("order")}&select=${view.get("select")}&label=${
              view.get("f.label")
            }`,
          );
          assert.equal(expected.status, 200);
          const got = await Deno.readTextFile(await csv.path());
          assert.equal(got, expected.text);
          assert.ok(got.split("\n").length > 900, "every row of the filter");
          await dialog.getByLabel("Parquet").check();
          const [parquet] = await Promise.all([
            page.waitForEvent("download"),
            dialog.getByRole("button", { name: "Download" }).click(),
          ]);
          const bytes = await Deno.readFile(await parquet.path());
          assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "PAR1");
          page.off("request", onRequest);
          const downloads = urls.filter((u) => u.includes("/api/v1/download/"));
          assert.equal(downloads.length, 2, urls.join(" "));
          assert.ok(urls.every((u) => !u.includes(server.token)), "the token went into a URL");
          // The ticket was single use.
          const again = await fetch(downloads[0]!);
          assert.equal(again.status, 404);
          await again.body?.cancel();
          await page.keyboard.press("Escape");
          await dialog.waitFor({ state: "detached" });
        },
      );

      await t.step(
        "profiles: null share, distinct, histogram and top values; a click filters",
        async () => {
          await page.goto(`${server.base}/ui/table?schema=public&table=big&profile=1`);
          const histogram = page.getByRole("group", { name: "Histogram of value" });
          await histogram.getByRole("button").first().waitFor();
          const bars = await histogram.getByRole("button").count();
          assert.ok(bars > 1, `${bars} bars`);
          const summary = ok(await server.request("GET", "table/big/summary?bins=12&top=5"));
          const figures = summary.columns.find((c: { name: string }) => c.name === "value");
          assert.equal(bars, figures.histogram.length);
          const first = figures.histogram[0];
          await histogram.getByRole("button").first().click();
          await eventually(() => {
            const filters = new URL(page.url()).searchParams.getAll("f.value");
            assert.deepEqual(filters, [`gte.${first.from}`, `lt.${first.to}`]);
          });
          await eventually(async () => {
            const rows = await gridRows(page, "Rows of big");
            assert.ok(rows.length > 0);
            for (const row of rows) {
              const v = Number(row[2]);
              assert.ok(v >= first.from && v < first.to, `${v} outside ${first.from}–${first.to}`);
            }
          });
          const labels = figures === undefined
            ? []
            : summary.columns.find((c: { name: string }) => c.name === "label").top;
          const top = page.getByRole("list", { name: "Most frequent values of label" });
          await top.getByRole("button").first().waitFor();
          assert.ok(labels.length > 0);
          await top.getByRole("button", { name: labels[0].value, exact: true }).click();
          await eventually(() =>
            assert.deepEqual(new URL(page.url()).searchParams.getAll("f.label"), [
              `eq.${labels[0].value}`,
            ])
          );
          await page.getByRole("status").filter({ hasText: /matching rows/ }).first().waitFor();
        },
      );

      await t.step(
        "columns: every change previewed by a dry run, then applied; a stale one offers a reload",
        async () => {
          await page.goto(`${server.base}/ui/table?schema=public&table=made_here`);
          await page.getByRole("button", { name: "Edit columns" }).click();
          const dialog = page.getByRole("dialog");
          await dialog.getByLabel("Name of column title").fill("heading");
          await dialog.getByRole("button", { name: "Add column" }).click();
          await dialog.getByLabel("Name of new column 3").fill("rank");
          await dialog.getByLabel("Type of new column 3").fill("INTEGER");
          assert.equal(
            await dialog.getByRole("button", { name: "Apply changes" }).isDisabled(),
            true,
          );
          await dialog.getByRole("button", { name: "Preview changes" }).click();
          const preview = dialog.getByRole("status", { name: "Preview of the changes" });
          await preview.getByText("rename column heading: title → heading").waitFor();
          await preview.getByText(/add column rank/).waitFor();
          // Nothing has changed yet.
          const before = ok(await server.request("GET", "table/made_here")).table;
          assert.deepEqual(before.columns.map((c: { name: string }) => c.name), ["id", "title"]);
          await dialog.getByRole("button", { name: "Apply changes" }).click();
          await dialog.waitFor({ state: "detached" });
          const after = ok(await server.request("GET", "table/made_here")).table;
          assert.deepEqual(after.columns.map((c: { name: string }) => c.name), [
            "id",
            "heading",
            "rank",
          ]);

          // Rows that would not fit are listed, and the change cannot be applied.
          ok(
            await server.request("POST", "table/made_here/records", {
              body: [{ id: 1, heading: "first", rank: 1 }],
            }),
          );
          await page.reload();
          await page.getByRole("button", { name: "Edit columns" }).click();
          await dialog.getByLabel("Type of column heading").fill("INTEGER");
          await dialog.getByRole("button", { name: "Preview changes" }).click();
          await preview.getByText("Nothing was changed").waitFor();
          await preview.getByRole("listitem").filter({ hasText: "heading" }).first().waitFor();
          assert.equal(
            await dialog.getByRole("button", { name: "Apply changes" }).isDisabled(),
            true,
          );

          // Another change lands meanwhile: the If-Match of the dialog is stale.
          const current = ok(await server.request("GET", "table/made_here")).table;
          ok(
            await server.request("PUT", "table/made_here", {
              body: {
                table: { columns: [...current.columns, { name: "extra", type: "VARCHAR" }] },
              },
            }),
          );
          await dialog.getByLabel("Type of column heading").fill("VARCHAR");
          await dialog.getByRole("button", { name: "Preview changes" }).click();
          await dialog.getByText("The table changed since it was read").waitFor();
          await dialog.getByRole("button", { name: "Reload" }).click();
          await dialog.waitFor({ state: "detached" });
          await page.getByRole("grid", { name: "Rows of made_here" }).getByRole("columnheader", {
            name: /^extra/,
          }).waitFor();
          await page.goto(`${server.base}/ui/table?schema=public&table=big`);
        },
      );

      await t.step(
        "a table without a primary key: insertion order, no edits, and why",
        async () => {
          await page.goto(`${server.base}/ui/table?schema=public&table=events`);
          await page.getByRole("note").filter({ hasText: "no primary key" }).waitFor();
          await eventually(async () =>
            assert.deepEqual((await gridRows(page, "Rows of events"))[0], ["1000", "event 0"])
          );
          const grid = page.getByRole("grid", { name: "Rows of events" });
          await grid.getByRole("gridcell", { name: "event 0", exact: true }).dblclick();
          assert.equal(await grid.locator("input").count(), 0, "a cell became editable");
          await page.getByRole("button", { name: "Last rows" }).click();
          await eventually(async () =>
            assert.deepEqual((await gridRows(page, "Rows of events"))[0], ["751", "event 249"])
          );
        },
      );

      await t.step("edits: a cell by primary key, a conflict said with a reload", async () => {
        await page.goto(`${server.base}/ui/table?schema=public&table=people`);
        const grid = page.getByRole("grid", { name: "Rows of people" });
        await grid.getByRole("gridcell", { name: "London" }).dblclick();
        await grid.getByLabel("New value of city, row 1").fill("Cambridge");
        await page.keyboard.press("Enter");
        await grid.getByRole("gridcell", { name: "Cambridge" }).waitFor();
        assert.equal(
          ok(await server.request("GET", "table/people/records?id=eq.1")).records[0].city,
          "Cambridge",
        );

        await grid.getByRole("gridcell", { name: "Grace" }).dblclick();
        await grid.getByLabel("New value of name, row 2").fill("Ada");
        await page.keyboard.press("Enter");
        const alert = page.getByRole("alert").filter({ hasText: /./ });
        await alert.first().waitFor();
        const refused = await server.request("PATCH", "table/people/records?id=eq.2", {
          body: { name: "Ada" },
        });
        assert.equal(refused.status, 409);
        assert.match(
          await alert.first().textContent() ?? "",
          new RegExp(
            refused.body.error.message.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, "\\$&"),
          ),
        );
        await alert.getByRole("button", { name: "Reload" }).click();
        await page.getByRole("alert").waitFor({ state: "detached" });
      });

      await t.step(
        "deletes: selected rows, and every row of the filter after its count",
        async () => {
          const grid = page.getByRole("grid", { name: "Rows of people" });
          await grid.getByLabel("Select row 4").check();
          await grid.getByLabel("Select row 5").check();
          await page.getByRole("button", { name: "Delete 2 selected" }).click();
          await page.getByRole("dialog").getByText("2 rows will be deleted").waitFor();
          await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
          await eventually(async () =>
            assert.equal(ok(await server.request("GET", "table/people/records")).total, 3)
          );
          await page.goto(`${server.base}/ui/table?schema=public&table=people&f.city=like.N*`);
          await page.getByRole("button", { name: "Delete matching rows" }).click();
          await page.getByRole("dialog").getByText("2 rows will be deleted").waitFor();
          await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
          await eventually(async () =>
            assert.deepEqual(
              ok(await server.request("GET", "table/people/records")).records.map((
                r: { name: string },
              ) => r.name),
              ["Ada"],
            )
          );
        },
      );

      await t.step(
        "SQL: completion knows the columns, Ctrl+Enter runs, the URL keeps the query",
        async () => {
          await page.goto(`${server.base}/ui/sql`);
          const editor = page.locator(".cm-content");
          await editor.waitFor();
          await editor.click();
          await page.keyboard.type("SELECT id, lab");
          await page.locator(".cm-tooltip-autocomplete").getByText("label").first().waitFor();
          await page.keyboard.press("Escape");
          await page.keyboard.type("el, value FROM big WHERE id <= 3 ORDER BY id");
          await page.keyboard.press("Control+Enter");
          const grid = page.getByRole("grid", { name: "Query result" });
          await eventually(async () =>
            assert.deepEqual(await gridRows(page, "Query result"), [
              ["1", "label-1", "0.1"],
              ["2", "label-2", "0.2"],
              ["3", "label-3", "0.3"],
            ])
          );
          assert.ok(await grid.isVisible());
          assert.deepEqual(
            (await grid.getByRole("columnheader").allTextContents()).map((t) => t.trim()),
            ["id INTEGER", "label VARCHAR", "value DOUBLE"],
          );
          // Drawn, not only present: a header squeezed to nothing once hid the names.
          const box = await grid.getByRole("columnheader").first().locator(".name").boundingBox();
          assert.ok(box && box.height >= 10, `the name is ${box?.height} px high`);
          assert.equal(
            new URL(page.url()).searchParams.get("sql"),
            "SELECT id, label, value FROM big WHERE id <= 3 ORDER BY id",
          );
          await page.reload();
          await eventually(async () =>
            assert.equal((await gridRows(page, "Query result")).length, 3)
          );
        },
      );

      await t.step("SQL: a refusal is shown in the server's words", async () => {
        const sql = "DROP TABLE big";
        const refused = await server.request("POST", "query", { body: { sql } });
        assert.equal(refused.status, 400);
        await page.goto(`${server.base}/ui/sql?sql=${encodeURIComponent(sql)}`);
        await page.getByRole("alert").filter({ hasText: refused.body.error.message }).waitFor();
      });

      await t.step("SQL: a result becomes a chart, downloadable as SVG and PNG", async () => {
        const sql =
          "SELECT id % 10 AS k, count(*) AS n, avg(value) AS mean FROM big WHERE id <= 50 GROUP BY k ORDER BY k";
        await page.goto(
          `${server.base}/ui/sql?sql=${encodeURIComponent(sql)}&chart=bar&x=k&y=mean`,
        );
        const chart = page.getByRole("img", { name: "mean by k" });
        await chart.waitFor();
        assert.equal(await chart.locator("rect[fill='#2563eb']").count(), 10);
        for (const kind of ["line", "scatter", "histogram"]) {
          await page.locator("#chart-kind").selectOption(kind);
          await eventually(() => assert.match(page.url(), new RegExp(`chart=${kind}`)));
          await page.locator("svg.chart-svg").waitFor();
        }
        const [svg] = await Promise.all([
          page.waitForEvent("download"),
          page.getByRole("button", { name: "Download SVG" }).click(),
        ]);
        const svgText = await Deno.readTextFile(await svg.path());
        assert.match(svgText, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
        const [png] = await Promise.all([
          page.waitForEvent("download"),
          page.getByRole("button", { name: "Download PNG" }).click(),
        ]);
        const pngBytes = await Deno.readFile(await png.path());
        assert.deepEqual([...pngBytes.subarray(1, 4)], [0x50, 0x4e, 0x47]);
      });

      await t.step("templates: versions, a side-by-side diff, a draft's verdict", async () => {
        ok(
          await server.request("POST", "table_template/contact", {
            body: {
              table_template: {
                columns: [{ name: "email", type: "VARCHAR" }, { name: "phone", type: "VARCHAR" }],
              },
              version: "1.1",
              compatibility: "backward",
            },
          }),
        );
        await page.goto(`${server.base}/ui/templates?name=contact`);
        const diff = page.locator("table.diff");
        await diff.waitFor();
        const phone = diff.getByRole("row").filter({
          has: page.getByRole("rowheader", { name: "phone" }),
        });
        assert.equal((await phone.getByRole("cell").last().textContent())?.trim(), "added");
        await page.getByRole("button", { name: "Check compatibility" }).click();
        await page.getByRole("status").filter({ hasText: /^Compatible/ }).waitFor();
        const draft = JSON.stringify({
          columns: [{ name: "email", type: "VARCHAR" }, { name: "phone", type: "VARCHAR" }, {
            name: "age",
            type: "INTEGER",
            is_nullable: false,
          }],
        });
        await page.locator("#draft").fill(draft);
        await page.getByRole("button", { name: "Check compatibility" }).click();
        await page.getByRole("status").filter({ hasText: "Not compatible" }).waitFor();
      });

      await t.step(
        "import: a file goes up with progress; a refused one lists its rows and writes nothing",
        async () => {
          await page.goto(`${server.base}/ui/import`);
          await page.locator("#import-file").setInputFiles({
            name: "cities.csv",
            mimeType: "text/csv",
            buffer: Buffer.from(
              "name,population\nParis,2100000\nRome,2800000\n",
            ),
          });
          assert.equal(await page.getByRole("textbox", { name: "Table" }).inputValue(), "cities");
          // The server's preview: the columns it would make, the rows as stored, nothing written.
          await page.getByRole("button", { name: "Preview" }).click();
          await page.getByRole("status").filter({ hasText: "2 rows would go into cities" })
            .waitFor();
          await page.getByRole("grid", { name: "Preview rows" }).getByRole("gridcell", {
            name: "Rome",
          }).waitFor();
          assert.equal((await server.request("GET", "table/cities")).status, 404);
          // Rename a column and change its type, preview again, then import.
          await page.getByLabel("Column name for population").fill("people");
          await page.getByLabel("Type of population").fill("INTEGER");
          await page.getByRole("button", { name: "Preview" }).click();
          await page.getByRole("grid", { name: "Preview rows" }).getByRole("columnheader", {
            name: /^people/,
          }).waitFor();
          assert.equal((await server.request("GET", "table/cities")).status, 404);
          await page.getByRole("button", { name: "Import" }).click();
          await page.getByRole("status").filter({ hasText: "2 rows went into" }).waitFor();
          const made = ok(await server.request("GET", "table/cities")).table;
          assert.deepEqual(
            made.columns.map((c: { name: string; type: string }) => [c.name, c.type]),
            [["name", "VARCHAR"], ["people", "INTEGER"]],
          );
          assert.equal(ok(await server.request("GET", "table/cities/records")).total, 2);

          const more = "name,people\nOslo,700000\nBern,many\n";
          await page.locator("#import-file").setInputFiles({
            name: "more.csv",
            mimeType: "text/csv",
            buffer: Buffer.from(more),
          });
          await page.getByRole("textbox", { name: "Table" }).fill("cities");
          await page.getByLabel("append to the table").check();
          await page.getByRole("button", { name: "Preview" }).click();
          await page.getByRole("status").filter({ hasText: "would be refused" }).waitFor();
          assert.equal(
            await page.getByRole("button", { name: "Import" }).isDisabled(),
            true,
            "a refused file can be imported",
          );
          // Sent without a preview, the refusal is the upload's own.
          await page.getByLabel("replace the table").check();
          await page.getByLabel("append to the table").check();
          await page.getByRole("button", { name: "Import" }).click();
          // The server's own refusal of the same file, which writes nothing either.
          const refused = await server.request("POST", "table/cities/upload/csv?if_exists=append", {
            body: uploadForm(new TextEncoder().encode(more), "more.csv"),
          });
          assert.equal(refused.status, 422);
          const detail = refused.body.error.details[0];
          const alert = page.getByRole("alert");
          await alert.filter({ hasText: refused.body.error.message }).waitFor();
          await alert.getByRole("listitem").filter({
            hasText: `row ${detail.row} (0-based), column ${detail.column}: ${detail.message}`,
          }).waitFor();
          await page.getByText("Nothing was written.").waitFor();
          assert.equal(ok(await server.request("GET", "table/cities/records")).total, 2);

          // Appended from a file with other headers: each mapped to a column, then imported.
          await page.locator("#import-file").setInputFiles({
            name: "others.csv",
            mimeType: "text/csv",
            buffer: Buffer.from("City,Pop\nLima,10000000\nQuito,2800000\n"),
          });
          await page.getByRole("textbox", { name: "Table" }).fill("cities");
          await page.getByLabel("append to the table").check();
          await page.getByRole("button", { name: "Preview" }).click();
          await page.getByRole("status").filter({ hasText: "would be refused" }).waitFor();
          await page.getByLabel("Column for City").selectOption("name");
          await page.getByLabel("Column for Pop").selectOption("people");
          await page.getByRole("button", { name: "Preview" }).click();
          await page.getByRole("status").filter({ hasText: "2 rows would go into cities" })
            .waitFor();
          assert.equal(ok(await server.request("GET", "table/cities/records")).total, 2);
          await page.getByRole("button", { name: "Import" }).click();
          await page.getByRole("status").filter({ hasText: "2 rows went into" }).waitFor();
          assert.deepEqual(
            ok(await server.request("GET", "table/cities/records?name=eq.Lima")).records,
            [{ name: "Lima", people: 10000000 }],
          );

          // A spreadsheet: its second sheet picked by name, previewed, then imported.
          const book = XLSX.utils.book_new();
          XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([["x"], [1]]), "first");
          XLSX.utils.book_append_sheet(
            book,
            XLSX.utils.aoa_to_sheet([["planet", "moons"], ["Mars", 2], ["Jupiter", 95]]),
            "second",
          );
          const xlsx = new Uint8Array(
            XLSX.write(book, { type: "array", bookType: "xlsx" }) as ArrayBuffer,
          );
          await page.getByLabel("create a new table").check();
          await page.locator("#import-file").setInputFiles({
            name: "planets.xlsx",
            mimeType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            buffer: Buffer.from(xlsx),
          });
          await page.getByRole("textbox", { name: "Table" }).fill("planets");
          await page.getByRole("textbox", { name: "Sheet" }).fill("second");
          await page.getByRole("button", { name: "Preview" }).click();
          await page.getByRole("grid", { name: "Preview rows" }).getByRole("gridcell", {
            name: "Jupiter",
          }).waitFor();
          await page.getByRole("button", { name: "Import" }).click();
          await page.getByRole("status").filter({ hasText: "2 rows went into" }).waitFor();
          assert.deepEqual(
            ok(await server.request("GET", "table/planets/records")).records,
            [{ planet: "Mars", moons: 2 }, { planet: "Jupiter", moons: 95 }],
          );

          // JSON, one object per line.
          await page.locator("#import-file").setInputFiles({
            name: "pets.ndjson",
            mimeType: "application/x-ndjson",
            buffer: Buffer.from('{"name": "Rex", "legs": 4}\n{"name": "Tweety", "legs": 2}\n'),
          });
          await page.getByRole("textbox", { name: "Table" }).fill("pets");
          await page.getByRole("button", { name: "Import" }).click();
          await page.getByRole("status").filter({ hasText: "2 rows went into" }).waitFor();
          assert.equal(ok(await server.request("GET", "table/pets/records")).total, 2);
        },
      );

      await t.step("XSS: hostile names and values are drawn as text and run nothing", async () => {
        await page.goto(`${server.base}/ui/table?schema=public&table=hostile`);
        const grid = page.getByRole("grid", { name: "Rows of hostile" });
        await grid.getByRole("gridcell", { name: XSS, exact: true }).waitFor();
        await grid.getByRole("gridcell", { name: SCRIPT_END, exact: true }).waitFor();
        await grid.getByRole("gridcell", { name: JS_URL, exact: true }).first().waitFor();
        await grid.getByRole("columnheader", {
          name: new RegExp(XSS.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")),
        }).waitFor();
        await page.selectOption("#filter-column", XSS);
        await page.locator("#filter-value").fill(XSS);
        await page.getByRole("button", { name: "Filter", exact: true }).click();
        await page.getByRole("listitem").filter({ hasText: `${XSS} eq.${XSS}` }).waitFor();
        await page.getByRole("button", { name: "Profiles" }).click();
        await page.locator(".profile .figures").first().waitFor();
        await page.goto(
          `${server.base}/ui/sql?sql=${
            encodeURIComponent(`SELECT * FROM hostile ORDER BY id`)
          }&chart=bar`,
        );
        await page.getByRole("grid", { name: "Query result" }).getByRole("gridcell", {
          name: XSS,
          exact: true,
        }).waitFor();
        await page.waitForTimeout(300);
        assert.equal(await page.locator("main img, main script").count(), 0);
        assert.equal(await page.locator("a[href^='javascript:' i]").count(), 0);
        assert.deepEqual(seen.dialogs, [], "a payload ran");
      });

      await t.step(
        "a read-only token sees no edit controls, and the server refuses anyway",
        async () => {
          await page.getByRole("button", { name: "Sign out" }).click();
          await signIn(page, server.base, readOnly);
          assert.equal(await page.getByRole("button", { name: "New table" }).count(), 0);
          assert.equal(await page.getByRole("button", { name: "New schema" }).count(), 0);
          assert.equal(await page.getByRole("link", { name: "Import" }).count(), 0);
          await page.goto(`${server.base}/ui/table?schema=public&table=people`);
          const grid = page.getByRole("grid", { name: "Rows of people" });
          await grid.getByRole("gridcell", { name: "Ada" }).waitFor();
          await page.getByRole("note").filter({ hasText: "Read only" }).waitFor();
          for (const name of [/Delete/, /Drop table/, /Edit columns/]) {
            assert.equal(await page.getByRole("button", { name }).count(), 0, String(name));
          }
          assert.equal(await grid.getByRole("checkbox").count(), 0);
          await grid.getByRole("gridcell", { name: "Ada" }).dblclick();
          assert.equal(await grid.locator("input").count(), 0, "a cell became editable");
          const refused = await server.request("DELETE", "table/people/records?id=eq.1", {
            token: readOnly,
          });
          assert.equal(refused.status, 403);
          // Without templates:read there is no Templates screen to go to.
          await page.getByRole("button", { name: "Sign out" }).click();
          await signIn(page, server.base, await mint({ scope: "tables:read" }));
          await page.getByRole("link", { name: "SQL" }).waitFor();
          assert.equal(await page.getByRole("link", { name: "Templates" }).count(), 0);
          await page.getByRole("button", { name: "Sign out" }).click();
          await signIn(page, server.base, server.token);
        },
      );

      await t.step("themes: the system's, and the toggle", async () => {
        await page.emulateMedia({ colorScheme: "dark" });
        const background = () => page.evaluate("getComputedStyle(document.body).backgroundColor");
        assert.equal(await background(), "rgb(17, 24, 39)");
        await page.emulateMedia({ colorScheme: "light" });
        assert.equal(await background(), "rgb(255, 255, 255)");
        const toggle = page.locator("[data-theme-toggle]");
        await toggle.click(); // system → light
        await toggle.click(); // light → dark
        assert.equal(await page.evaluate("document.documentElement.dataset.theme"), "dark");
        assert.equal(await background(), "rgb(17, 24, 39)");
        await toggle.click(); // dark → system
        await eventually(async () =>
          assert.equal(await page.evaluate("document.documentElement.dataset.theme"), undefined)
        );
      });

      await t.step(
        "axe finds no serious or critical problem on any screen, in either theme",
        async () => {
          const screens: [string, () => Promise<void>][] = [
            ["tables", () => page.getByRole("link", { name: "big" }).waitFor()],
            [
              "table?schema=public&table=people&profile=1",
              () => page.locator(".profile .figures").first().waitFor(),
            ],
            [
              `sql?sql=${
                encodeURIComponent(
                  "SELECT label, count(*) AS n FROM big WHERE id < 20 GROUP BY label",
                )
              }&chart=bar`,
              () => page.locator("svg.chart-svg").waitFor(),
            ],
            ["templates?name=contact", () => page.locator("table.diff").waitFor()],
            ["table?schema=public&table=people", async () => {
              await page.getByRole("button", { name: "Edit columns" }).click();
              await page.getByRole("dialog").waitFor();
            }],
            ["import", () => page.locator("#import-file").waitFor()],
          ];
          const problems: string[] = [];
          for (const scheme of ["light", "dark"] as const) {
            await page.emulateMedia({ colorScheme: scheme });
            for (const [path, ready] of screens) {
              await page.goto(`${server.base}/ui/${path}`);
              await ready();
              problems.push(
                ...(await axeProblems(page, seen)).map((p) => `${scheme} ${path}: ${p}`),
              );
            }
            await page.getByRole("button", { name: "Sign out" }).click();
            await page.locator("#token").waitFor();
            problems.push(...(await axeProblems(page, seen)).map((p) => `${scheme} sign-in: ${p}`));
            await signIn(page, server.base, server.token);
          }
          assert.deepEqual(problems, []);
        },
      );

      await t.step("at 390×844 the page fits the screen; the grid scrolls inside", async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        for (const path of ["tables", "table?schema=public&table=big", "sql"]) {
          await page.goto(`${server.base}/ui/${path}`);
          await page.locator("main h1").waitFor();
          await page.waitForTimeout(200);
          const width = await page.evaluate<number>("document.documentElement.scrollWidth");
          assert.ok(width <= 390, `${path}: ${width} px wide`);
        }
        await page.setViewportSize({ width: 1280, height: 800 });
      });

      await t.step("the SQL editor, loaded later, is under 200 KB gzipped", async () => {
        let bytes = 0;
        const counted: Promise<void>[] = [];
        const onFinished = (request: import("npm:playwright-core@^1.65.1").Request) => {
          if (!new URL(request.url()).pathname.startsWith("/ui/")) return;
          counted.push(
            request.sizes().then((s) => {
              bytes += s.responseBodySize + s.responseHeadersSize;
            }),
          );
        };
        // A context of its own: nothing of the editor is in its cache yet.
        const other = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
        const fresh = await other.newPage();
        const freshSeen = await watch(fresh, server.base);
        await signIn(fresh, server.base, server.token);
        await fresh.getByRole("link", { name: "big" }).waitFor();
        await fresh.waitForLoadState("networkidle");
        fresh.on("requestfinished", onFinished);
        await fresh.getByRole("link", { name: "SQL" }).click();
        await fresh.locator(".cm-content").waitFor();
        await fresh.waitForLoadState("networkidle");
        await Promise.all(counted);
        await other.close();
        assert.deepEqual([...freshSeen.elsewhere, ...freshSeen.problems], []);
        assert.ok(bytes > 50_000, `${bytes} bytes: was the editor counted?`);
        assert.ok(bytes <= 200 * 1024, `the SQL editor transferred ${bytes} bytes`);
        console.log(`SQL editor: ${(bytes / 1024).toFixed(1)} KB transferred`);
      });

      assert.deepEqual(seen.elsewhere, [], "requests that left the service");
      assert.deepEqual(seen.problems, []);
    } finally {
      await browser?.close();
      await server.dispose();
    }
  },
});
