/**
 * A screenshot of each screen of the web UI, in both themes and at both sizes it is made for:
 * starts a service with sample tables, signs in, and saves PNG files to the directory given
 * (default: a new temporary directory, printed at the end). Nothing is written in the
 * repository unless asked.
 *
 *     deno run -A --lock=deno.dev.lock tests/ui_screenshots.ts [dir]
 *
 * @module
 */

import { ok, TestServer } from "./helpers/server.ts";
import { browserMissing, launchOffline, signIn } from "./helpers/ui.ts";

const SCREENS: readonly [string, string, string][] = [
  ["tables", "tables", "a[href*='table=orders']"],
  ["table", "table?schema=public&table=orders&order=amount.desc&profile=1", ".profile .figures"],
  ["table-filtered", "table?schema=public&table=orders&f.region=eq.north", "[role=gridcell]"],
  [
    "sql-chart",
    `sql?sql=${
      encodeURIComponent(
        "SELECT region, sum(amount) AS total FROM orders GROUP BY region ORDER BY region",
      )
    }&chart=bar&x=region&y=total`,
    "svg.chart-svg",
  ],
  ["templates", "templates?name=order", "table.diff"],
  ["import", "import", "#import-file"],
];

if (import.meta.main) {
  const missing = await browserMissing();
  if (missing) throw new Error(missing);
  const dir = Deno.args[0] ?? await Deno.makeTempDir({ prefix: "table-service-ui-" });
  await Deno.mkdir(dir, { recursive: true });
  const server = await TestServer.start({});
  const browser = await launchOffline();
  try {
    const regions = ["north", "south", "east", "west"];
    ok(
      await server.request("POST", "table/orders/upload/json", {
        body: {
          table: {
            columns: [
              { name: "id", type: "INTEGER", is_nullable: false },
              { name: "region", type: "VARCHAR" },
              { name: "amount", type: "DECIMAL(10,2)" },
              { name: "ordered", type: "DATE" },
            ],
            constraints: { primary_key: { columns: ["id"] } },
          },
          data: Array.from({ length: 500 }, (_, i) => ({
            id: i + 1,
            region: regions[i % 4],
            amount: ((i * 37) % 1000) / 10,
            ordered: new Date(Date.UTC(2026, 0, 1 + (i % 300))).toISOString().slice(0, 10),
          })),
        },
      }),
    );
    for (const version of ["1.0", "1.1"]) {
      const columns = [{ name: "id", type: "INTEGER" }, { name: "amount", type: "DECIMAL(10,2)" }];
      if (version === "1.1") columns.push({ name: "note", type: "VARCHAR" });
      ok(
        await server.request("POST", "table_template/order", {
          body: { table_template: { columns }, version, compatibility: "backward" },
        }),
      );
    }
    for (const [width, height] of [[1280, 800], [390, 844]] as const) {
      for (const scheme of ["light", "dark"] as const) {
        const context = await browser.newContext({
          viewport: { width, height },
          colorScheme: scheme,
        });
        const page = await context.newPage();
        await page.goto(`${server.base}/ui`);
        await page.locator("#token").waitFor();
        await page.screenshot({ path: `${dir}/sign-in-${scheme}-${width}.png` });
        await signIn(page, server.base, server.token);
        for (const [name, path, ready] of SCREENS) {
          await page.goto(`${server.base}/ui/${path}`);
          await page.locator(ready).first().waitFor({ timeout: 30_000 });
          await page.waitForTimeout(300);
          await page.screenshot({ path: `${dir}/${name}-${scheme}-${width}.png` });
        }
        await context.close();
      }
    }
    console.log(`Screenshots in ${dir}`);
  } finally {
    await browser.close();
    await server.dispose();
  }
}
