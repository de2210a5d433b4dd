/**
 * Issue 47, section 3, in the browser: a table of 10,000,000 rows opened in the web UI's grid
 * in Debian's headless Chromium, the UI's files already cached (a returning user). Measured:
 * the time from asking for the table's page to its first rows drawn (target ≤ 1 s); then 50
 * screens scrolled one at a time, the record pages asked for (target: at most one a screen)
 * and, for each page, the time from its answer's last byte to the grid's next drawing (target
 * ≤ 100 ms). Never asserted: printed.
 *
 * `deno task bench ui-grid [rows]` (10,000,000 by default; the load goes up in CSV parts of a
 * million rows).
 *
 * @module
 */

import { ok, TestServer, uploadForm } from "../tests/helpers/server.ts";
import { launchOffline, signIn } from "../tests/helpers/ui.ts";

const PART = 1_000_000;
const SCREENS = 50;

/** A CSV part of rows `from` (1-based) up to `to`, header included. */
function part(from: number, to: number): Uint8Array {
  const lines = ["id,label,value"];
  for (let id = from; id <= to; id++) lines.push(`${id},label-${id % 1000},${(id % 997) / 10}`);
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

/** Opens a table of `rows` rows in the UI's grid and prints the figures against their targets. */
export async function uiGrid(rows = 10_000_000): Promise<void> {
  const server = await TestServer.start({ LOG_LEVEL: "error", DUCKDB_MEMORY_LIMIT: "" });
  const browser = await launchOffline();
  try {
    const started = performance.now();
    ok(
      await server.request("POST", "table/grid", {
        body: {
          table: {
            columns: [
              { name: "id", type: "BIGINT", is_nullable: false },
              { name: "label", type: "VARCHAR" },
              { name: "value", type: "DOUBLE" },
            ],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    for (let from = 1; from <= rows; from += PART) {
      const to = Math.min(rows, from + PART - 1);
      ok(
        await server.request("POST", "table/grid/upload/csv?if_exists=append", {
          body: uploadForm(part(from, to), "part.csv"),
        }),
      );
    }
    console.log(
      `loaded ${rows.toLocaleString("en")} rows in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s`,
    );

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } }))
      .newPage();
    await signIn(page, server.base, server.token);
    // The files are cached and revalidated from here on, as for a person coming back.
    await page.goto(`${server.base}/ui/sql`);
    await page.locator(".cm-content").waitFor();
    await page.goto(`${server.base}/ui/tables`);
    await page.getByRole("link", { name: "grid" }).waitFor();

    const opened = performance.now();
    await page.goto(`${server.base}/ui/table?schema=public&table=grid`);
    await page.getByRole("grid", { name: "Rows of grid" }).getByRole("gridcell", {
      name: "1",
      exact: true,
    }).first().waitFor();
    const firstRows = performance.now() - opened;

    // In the page: when each record page's answer ended, and when the grid's rows changed.
    await page.evaluate(`(() => {
      window.__answers = [];
      window.__draws = [];
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          if (entry.name.includes("/records?") && entry.name.includes("count=none")) {
            window.__answers.push(entry.responseEnd);
          }
        }
      }).observe({ type: "resource", buffered: false });
      new MutationObserver(() => window.__draws.push(performance.now()))
        .observe(document.querySelector(".grid-body"), { childList: true, subtree: true, attributes: true });
    })()`);
    const grid = page.getByRole("grid", { name: "Rows of grid" });
    const screen = await grid.evaluate((el) => el.clientHeight);
    for (let i = 0; i < SCREENS; i++) {
      await grid.evaluate((el, by) => el.scrollTop += by, screen);
      await page.waitForTimeout(100);
    }
    await page.waitForLoadState("networkidle");
    const { answers, draws } = await page.evaluate<{ answers: number[]; draws: number[] }>(
      "({ answers: window.__answers, draws: window.__draws })",
    );
    const latencies = answers.map((end) => {
      const next = draws.find((t) => t >= end);
      return next === undefined ? Infinity : next - end;
    });
    console.log(`first rows drawn ${firstRows.toFixed(0)} ms after asking for the page (≤ 1000)`);
    console.log(
      `${SCREENS} screens of ${screen} px: ${answers.length} record pages asked for (≤ ${SCREENS})`,
    );
    console.log(
      `drawn after each answer: ${latencies.map((l) => `${l.toFixed(0)} ms`).join(", ")} (≤ 100)`,
    );
  } finally {
    await browser.close();
    await server.dispose();
  }
}
