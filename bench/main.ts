/**
 * `deno task bench`: measures the service against baselines taken in the same run.
 *
 * These machines are shared and noisy, so every number is printed next to a baseline
 * measured moments before on the same machine, and the ratio is what to compare.
 *
 * @module
 */

import { TestServer } from "../tests/helpers/server.ts";
import { analytics } from "./analytics.ts";
import { blocks } from "./blocks.ts";
import { files } from "./files.ts";
import { interactive } from "./interactive.ts";
import { load } from "./load.ts";
import { loading } from "./loading.ts";
import { pages } from "./pages.ts";
import { uiGrid } from "./ui_grid.ts";
import { retained, retainedGrowth } from "./retained.ts";
import { scaleOut } from "./scale_out.ts";
import { percentile } from "./measure.ts";
import { readBounds } from "./read_bounds.ts";
import { backup } from "./backup.ts";
import { wide } from "./wide.ts";
import { soak } from "./soak.ts";
import { pgwire } from "./pgwire.ts";

/** Times `count` sequential calls of `work`, returning per-call milliseconds sorted. */
async function time(count: number, work: (i: number) => Promise<void>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await work(i);
    samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b);
}

async function expectOk(answer: Promise<{ status: number; text: string }>): Promise<void> {
  const { status, text } = await answer;
  if (status !== 200) throw new Error(`Benchmark request failed with ${status}: ${text}`);
}

async function definitions(): Promise<void> {
  const server = await TestServer.spawn({ LOG_LEVEL: "error" });
  try {
    const count = 300;
    const definition = {
      table: {
        columns: [
          { name: "id", type: "bigserial" },
          { name: "email", type: "varchar", is_nullable: false },
          { name: "price", type: "numeric(10,2)", default: "0" },
          { name: "created", type: "timestamptz", default: "now()" },
        ],
        constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["email"] }] },
      },
    };
    // Warm up connections and code paths before measuring.
    for (let i = 0; i < 20; i++) await expectOk(server.request("GET", "/healthz", { token: null }));
    const baseline = await time(
      count,
      () => expectOk(server.request("GET", "/healthz", { token: null })),
    );
    const create = await time(
      count,
      (i) => expectOk(server.request("POST", `table/t${i}`, { body: definition })),
    );
    const get = await time(count, (i) => expectOk(server.request("GET", `table/t${i}`)));
    const drop = await time(count, (i) => expectOk(server.request("DELETE", `table/t${i}`)));
    const rows = [
      ["GET /healthz (baseline)", baseline],
      ["POST /table/{name}", create],
      ["GET /table/{name}", get],
      ["DELETE /table/{name}", drop],
    ] as const;
    const base = percentile(baseline, 0.5);
    console.log(`\nTable definitions: ${count} sequential requests each, one client, loopback`);
    console.log("operation                 p50 ms   p99 ms   p50 / baseline p50");
    for (const [label, samples] of rows) {
      const p50 = percentile(samples, 0.5);
      console.log(
        `${label.padEnd(24)} ${p50.toFixed(2).padStart(7)} ${
          percentile(samples, 0.99).toFixed(2).padStart(8)
        }` +
          `   ${(p50 / base).toFixed(1).padStart(8)}×`,
      );
    }
  } finally {
    await server.dispose();
  }
}

if (import.meta.main) {
  const only = Deno.args[0];
  if (!only || only === "definitions") await definitions();
  if (!only || only === "loading") await loading(Number(Deno.args[1] ?? 1_000_000));
  if (!only || only === "files") await files();
  if (!only || only === "load") {
    const [, soak, connections, warm] = Deno.args;
    if ((warm !== undefined && warm !== "warm") || [soak, connections].includes("warm")) {
      throw new Error(
        `Unknown load arguments "${Deno.args.slice(1).join(" ")}": ` +
          "give [soak seconds] [connections] [warm], e.g. load 300 16 warm",
      );
    }
    await load(
      Number(soak ?? 300),
      connections === undefined ? undefined : Number(connections),
      warm === "warm",
    );
  }
  if (!only || only === "interactive") await interactive(Number(Deno.args[1] ?? 10));
  // Loads a million rows into each engine, a PostgreSQL of its own: run only when asked for.
  if (only === "pages") {
    await pages(
      Number(Deno.args[1] ?? 1_000_000),
      Number(Deno.args[2] ?? 300),
      Deno.args[3]?.split(","),
    );
  }
  // Loads 10 million rows and drives Chromium: run only when asked for.
  if (only === "ui-grid") await uiGrid(Number(Deno.args[1] ?? 10_000_000));
  if (!only || only === "retained") await retained(Number(Deno.args[1] ?? 4_000));
  if (!only || only === "bounds") await readBounds();
  if (only === "backup") await backup(Number(Deno.args[1] ?? 10_000_000));
  if (only === "soak") {
    const kinds = Deno.args[3]?.split(",").filter(Boolean);
    await soak(Number(Deno.args[1] ?? 60), Number(Deno.args[2] ?? 200), kinds);
  }
  // Needs a PostgreSQL of its own: run only when asked for.
  if (only === "pgwire") await pgwire(Number(Deno.args[1] ?? 1_000_000));
  if (only === "wide") await wide(Number(Deno.args[1] ?? 2000), Number(Deno.args[2] ?? 10_000));
  // Compares block sizes, minutes of loads: run only when asked for.
  if (only === "blocks") await blocks(Number(Deno.args[1] ?? 1_000_000), Number(Deno.args[2] ?? 3));
  // Needs a PostgreSQL of its own and minutes of loads: run only when asked for.
  if (only === "scale-out") {
    await scaleOut(Number(Deno.args[1] ?? 1_000_000), Number(Deno.args[2] ?? 10));
  }
  // Generates and loads 10 million rows three times over, minutes before the first figure: run
  // only when asked for.
  if (only === "analytics") {
    await analytics(Number(Deno.args[1] ?? 10_000_000), Number(Deno.args[2] ?? 7));
  }
  // It takes minutes to show what retained's bare part shows per call, that the cost holds as
  // calls add up, so it runs only when asked for.
  if (only === "growth") await retainedGrowth(Deno.args.slice(1));
}
