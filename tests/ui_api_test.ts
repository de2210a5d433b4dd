/**
 * The API the web UI stands on (docs/api.md): estimated counts, histograms and top values
 * in summaries, dry runs of uploads and updates, and download tickets.
 */
import assert from "node:assert/strict";
import { ENGINE } from "./helpers/engine.ts";
import { errorOf, ok, TestServer, uploadForm } from "./helpers/server.ts";

const encoder = new TextEncoder();

/** A CSV of `n` rows: an id, a group of 100 values, a text of 7 values and a date. */
function csvRows(n: number): Uint8Array {
  const lines = ["id,g,s,d"];
  for (let i = 0; i < n; i++) {
    const day = String(1 + (i % 28)).padStart(2, "0");
    lines.push(`${i},${i % 100},x${i % 7},2026-0${1 + (i % 3)}-${day}`);
  }
  return encoder.encode(lines.join("\n") + "\n");
}

Deno.test("count=estimated and the listing's rows_estimate", async (t) => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/big/upload/csv", {
        body: uploadForm(csvRows(20_000), "big.csv"),
      }),
    );
    ok(
      await server.request("POST", "table/small", {
        body: { table: { columns: [{ name: "a", type: "integer" }] } },
      }),
    );
    ok(
      await server.request("POST", "table/small/records", { body: [{ a: 1 }, { a: 2 }, { a: 3 }] }),
    );
    const exact = async (query: string) =>
      ok(await server.request("GET", `table/big/records?limit=0&${query}`)).total as number;

    await t.step("a small table is counted exactly under count=estimated", async () => {
      const page = ok(await server.request("GET", "table/small/records?count=estimated"));
      assert.equal(page.total, 3);
      assert.equal(page.estimated, false);
      assert.equal(page.records.length, 3);
    });

    await t.step("a big table's estimate comes from statistics, or its exact count", async () => {
      const page = ok(await server.request("GET", "table/big/records?count=estimated&limit=5"));
      assert.equal(page.records.length, 5);
      assert.equal(typeof page.estimated, "boolean");
      const counted = await exact("");
      if (page.estimated) {
        assert.ok(page.total > 10_000, `an estimate of ${page.total} would have been counted`);
        assert.ok(page.total <= counted * 2 && page.total >= counted / 2, `${page.total}`);
      } else {
        assert.equal(page.total, counted);
      }
      if (ENGINE === "duckdb") assert.equal(page.estimated, true);
    });

    await t.step("filters are estimated by the planner; a small estimate is counted", async () => {
      for (const filter of ["g=eq.5", "g=gte.0", "s=eq.x3&g=lt.50"]) {
        const page = ok(await server.request("GET", `table/big/records?count=estimated&${filter}`));
        const counted = await exact(filter);
        if (page.estimated) assert.ok(page.total > 10_000, `${filter}: ${page.total}`);
        else assert.equal(page.total, counted, filter);
      }
      const rare = ok(await server.request("GET", "table/big/records?count=estimated&g=eq.5"));
      assert.deepEqual([rare.total, rare.estimated], [await exact("g=eq.5"), false]);
    });

    await t.step(
      "count=estimated walks by cursor too, and other counts say nothing of it",
      async () => {
        const walk = ok(
          await server.request("GET", "table/small/records?count=estimated&after=&limit=2"),
        );
        assert.equal(walk.total, 3);
        assert.equal(typeof walk.next, "string");
        const plain = ok(await server.request("GET", "table/small/records?count=exact"));
        assert.equal("estimated" in plain, false);
        const none = ok(await server.request("GET", "table/small/records?count=none"));
        assert.equal("total" in none || "estimated" in none, false);
        const bad = errorOf(await server.request("GET", "table/small/records?count=planned"), 400);
        assert.match(bad.message, /count must be exact, estimated or none/);
      },
    );

    await t.step("the listing carries each table's rows_estimate", async () => {
      let listing = ok(await server.request("GET", "table"));
      // PostgreSQL's statistics collector publishes a backend's counts within a second or so
      // of its commit; the estimate is read as it is, so wait for it (no time is asserted).
      for (let i = 0; i < 40 && ENGINE === "postgres"; i++) {
        if (listing.tables.every((t: { rows_estimate: number }) => t.rows_estimate > 0)) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
        listing = ok(await server.request("GET", "table"));
      }
      const estimates = Object.fromEntries(
        listing.tables.map((
          t: { name: string; rows_estimate: number },
        ) => [t.name, t.rows_estimate]),
      );
      assert.equal(estimates.small, 3);
      assert.ok(estimates.big >= 10_000 && estimates.big <= 40_000, `${estimates.big}`);
      const verbose = ok(await server.request("GET", "table?verbose=true&schema=public"));
      assert.ok(
        verbose.tables.every((t: { columns: unknown[]; rows_estimate: number }) =>
          Array.isArray(t.columns) && Number.isInteger(t.rows_estimate)
        ),
      );
    });
  } finally {
    await server.dispose();
  }
});
