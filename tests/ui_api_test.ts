/**
 * The API the web UI stands on (docs/api.md): estimated counts, histograms and top values
 * in summaries, dry runs of uploads and updates, and download tickets.
 */
import assert from "node:assert/strict";
import { dropDatabase, ENGINE, engineEnv } from "./helpers/engine.ts";
import { withTempStore } from "./helpers/store.ts";
import { createApp } from "../src/http/app.ts";
import { createVerifier } from "../src/auth/jwt.ts";
import { createLogger } from "../src/log.ts";
import { openPostgresStore } from "../src/store/postgres/postgres_store.ts";
import type { Store } from "../src/store/store.ts";
import pg from "pg";
import * as XLSX from "xlsx";
import {
  ALL_SCOPES,
  assertSpoolEmpty,
  errorOf,
  fingerprint,
  mint,
  ok,
  seededRandom,
  TEST_SECRET,
  TestServer,
  uploadForm,
} from "./helpers/server.ts";

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

    await t.step({
      name: "on PostgreSQL an analysed table's estimate is its statistics' (reltuples)",
      ignore: ENGINE !== "postgres",
      fn: async () => {
        const client = new pg.Client({ connectionString: server.env.DATABASE_URL });
        await client.connect();
        try {
          await client.query("ANALYZE public.big");
          const { rows } = await client.query(
            "SELECT reltuples FROM pg_class WHERE oid = 'public.big'::regclass",
          );
          const page = ok(await server.request("GET", "table/big/records?count=estimated"));
          assert.equal(page.estimated, true);
          // Scaled by the pages the table has now, which ANALYZE just counted.
          assert.equal(page.total, Math.round(Number(rows[0].reltuples)));
          const listing = ok(await server.request("GET", "table?schema=public"));
          const big = listing.tables.find((t: { name: string }) => t.name === "big");
          assert.equal(big.rows_estimate, page.total);
          const filtered = ok(
            await server.request("GET", "table/big/records?count=estimated&g=lt.90"),
          );
          assert.equal(filtered.estimated, true);
          const counted = await exact("g=lt.90");
          assert.ok(Math.abs(filtered.total - counted) < counted / 2, `${filtered.total}`);
        } finally {
          await client.end();
        }
      },
    });

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

Deno.test("summary: bins=N histograms and top=K values, over the filtered rows", async (t) => {
  const server = await TestServer.start();
  try {
    const random = seededRandom(47);
    const names = ["ada", "grace", "alan", "edsger", "barbara"];
    const rows = Array.from({ length: 300 }, (_, i) => ({
      id: i,
      n: i % 10 === 0 ? null : Math.floor(random() * 1000) - 200,
      price: Math.round(random() * 100_000) / 100,
      day: new Date(Date.UTC(2026, 0, 1) + Math.floor(random() * 90) * 86_400_000)
        .toISOString().slice(0, 10),
      at: new Date(Date.UTC(2026, 0, 1) + Math.floor(random() * 1e10)).toISOString(),
      name: i % 7 === 0 ? null : names[Math.floor(random() * random() * names.length)]!,
      flag: random() < 0.3,
    }));
    const table = {
      columns: [
        { name: "id", type: "integer" },
        { name: "n", type: "bigint" },
        { name: "price", type: "double precision" },
        { name: "day", type: "date" },
        { name: "at", type: "timestamp with time zone" },
        { name: "name", type: "varchar" },
        { name: "flag", type: "boolean" },
      ],
    };
    ok(await server.request("POST", "table/people/upload/json", { body: { table, data: rows } }));
    const summary = async (query: string) =>
      ok(await server.request("GET", `table/people/summary?${query}`));
    const column = (answer: { columns: { name: string }[] }, name: string) =>
      // deno-lint-ignore no-explicit-any
      answer.columns.find((c) => c.name === name) as any;

    /** Each bin's count is the rows whose value lies in it; the bins cover every value. */
    const checkBins = (
      bins: { from: number | string; to: number | string; count: number }[],
      values: (number | string)[],
      asked: number,
    ) => {
      assert.ok(bins.length >= 1 && bins.length <= asked, `${bins.length} bins`);
      const key = (v: number | string) => typeof v === "number" ? v : Date.parse(v);
      const sorted = values.map(key).sort((a, b) => a - b);
      assert.equal(key(bins[0]!.from), sorted[0]);
      assert.equal(key(bins.at(-1)!.to), sorted.at(-1));
      bins.forEach((bin, i) => {
        const last = i === bins.length - 1;
        const inside = sorted.filter((v) =>
          v >= key(bin.from) && (last ? v <= key(bin.to) : v < key(bin.to))
        );
        assert.equal(bin.count, inside.length, `bin ${i} ${bin.from}..${bin.to}`);
      });
      assert.equal(bins.reduce((sum, b) => sum + b.count, 0), values.length);
    };

    await t.step("histograms of integers, floats, dates and timestamps", async () => {
      const answer = await summary("bins=12");
      const present = <K extends keyof (typeof rows)[number]>(k: K) =>
        rows.map((r) => r[k]).filter((v) => v !== null) as (number | string)[];
      checkBins(column(answer, "n").histogram, present("n"), 12);
      checkBins(column(answer, "price").histogram, present("price"), 12);
      checkBins(column(answer, "day").histogram, present("day"), 12);
      checkBins(column(answer, "at").histogram, present("at"), 12);
      assert.equal(column(answer, "name").histogram, null);
      assert.equal("top" in column(answer, "name"), false);
      // Whole widths for integers and dates: each bin's edges are values of the column.
      for (const bin of column(answer, "n").histogram) assert.ok(Number.isInteger(bin.from));
      for (const bin of column(answer, "day").histogram) {
        assert.match(bin.from, /^\d{4}-\d\d-\d\d$/);
      }
    });

    await t.step("top values of text and booleans, most frequent first", async () => {
      const answer = await summary("top=3");
      const frequencies = (k: "name" | "flag") => {
        const counts = new Map<unknown, number>();
        for (const r of rows) if (r[k] !== null) counts.set(r[k], (counts.get(r[k]) ?? 0) + 1);
        return counts;
      };
      const names = frequencies("name");
      const top = column(answer, "name").top as { value: string; count: number }[];
      assert.equal(top.length, Math.min(3, names.size));
      for (const { value, count } of top) assert.equal(count, names.get(value));
      const counts = [...names.values()].sort((a, b) => b - a).slice(0, 3);
      assert.deepEqual(top.map((v) => v.count), counts);
      const flags = column(answer, "flag").top as { value: boolean; count: number }[];
      assert.deepEqual(
        flags.map((f) => [f.value, f.count]).sort(),
        [...frequencies("flag")].sort(),
      );
      assert.equal(column(answer, "n").top, null);
      assert.equal("histogram" in column(answer, "n"), false);
    });

    await t.step("filters and select apply to histograms and top values", async () => {
      const answer = await summary("select=n,name&id=lt.100&flag=is.true&bins=5&top=10");
      assert.deepEqual(answer.columns.map((c: { name: string }) => c.name), ["n", "name"]);
      const kept = rows.filter((r) => r.id < 100 && r.flag);
      assert.equal(answer.rows, kept.length);
      checkBins(
        column(answer, "n").histogram,
        kept.map((r) => r.n).filter((v) => v !== null) as number[],
        5,
      );
      const named = kept.filter((r) => r.name !== null).length;
      assert.equal(
        column(answer, "name").top.reduce((s: number, v: { count: number }) => s + v.count, 0),
        named,
      );
      const none = await summary("id=lt.0&bins=5&top=5");
      assert.deepEqual([column(none, "n").histogram, column(none, "name").top], [[], []]);
    });

    await t.step("bins and top are counts within their limits, never filters", async () => {
      for (const query of ["bins=1001", "top=-1", "bins=x", "top=1.5", "bins=2&bins=3"]) {
        const error = errorOf(await server.request("GET", `table/people/summary?${query}`), 400);
        assert.match(error.message, /(bins|top)/, query);
      }
      const plain = await summary("bins=0&top=");
      assert.equal("histogram" in plain.columns[0] || "top" in plain.columns[0], false);
      // On a records read the same names are filters of columns the table lacks.
      errorOf(await server.request("GET", "table/people/records?bins=5"), 400);
    });
  } finally {
    await server.dispose();
  }
});

/** An xlsx workbook of `rows` (the first the header) in one sheet named "Data". */
function workbook(rows: unknown[][]): Uint8Array {
  const book = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(rows), "Data");
  return new Uint8Array(XLSX.write(book, { type: "array", bookType: "xlsx" }) as ArrayBuffer);
}

Deno.test("uploads: dry_run=true answers what they would do and writes nothing", async (t) => {
  const server = await TestServer.start();
  try {
    const csv = encoder.encode(
      "Unit Price;Name;Qty\n" +
        Array.from({ length: 150 }, (_, i) => `${i}.5;item ${i};${i % 4}`).join("\n") + "\n",
    );
    const nothingChanged = async (before: string) =>
      assert.equal(await fingerprint(server), before);

    await t.step("a CSV dry run infers the table and shows its first 100 rows", async () => {
      const before = await fingerprint(server);
      const answer = ok(
        await server.request("POST", "table/items/upload/csv?dry_run=true", {
          body: uploadForm(csv, "items.csv"),
        }),
      );
      assert.equal(answer.dry_run, true);
      assert.equal(answer.inserted, 150);
      assert.deepEqual(answer.errors, []);
      assert.deepEqual(answer.table.columns.map((c: { name: string }) => c.name), [
        "Unit Price",
        "Name",
        "Qty",
      ]);
      assert.equal(answer.records.length, 100);
      assert.deepEqual(answer.records[3], { "Unit Price": 3.5, Name: "item 3", Qty: 3 });
      assert.deepEqual(answer.headers, ["Unit Price", "Name", "Qty"]);
      await nothingChanged(before);
      errorOf(await server.request("GET", "table/items"), 404);
      await assertSpoolEmpty(server);
    });

    await t.step("headers in the body part rename the file's headers", async () => {
      const body = {
        table: {
          columns: [
            { name: "price", type: "decimal(10,2)" },
            { name: "name", type: "varchar" },
            { name: "qty", type: "integer" },
          ],
        },
        headers: { "Unit Price": "price", name: "name", QTY: "qty" },
      };
      const dry = ok(
        await server.request("POST", "table/items/upload/csv?dry_run=true", {
          body: uploadForm(csv, "items.csv", body),
        }),
      );
      assert.deepEqual(dry.records[1], { price: 1.5, name: "item 1", qty: 1 });
      assert.deepEqual(dry.headers, ["price", "name", "qty"]);
      errorOf(await server.request("GET", "table/items"), 404);
      const real = ok(
        await server.request("POST", "table/items/upload/csv", {
          body: uploadForm(csv, "items.csv", body),
        }),
      );
      assert.equal(real.inserted, 150);
      const page = ok(await server.request("GET", "table/items/records?limit=2"));
      assert.deepEqual(page.records, dry.records.slice(0, 2));
      const unknown = errorOf(
        await server.request("POST", "table/other/upload/csv", {
          body: uploadForm(csv, "items.csv", { headers: { Price: "price" } }),
        }),
        422,
      );
      assert.match(unknown.message, /no header "Price"/);
      const bad = errorOf(
        await server.request("POST", "table/other/upload/csv", {
          body: uploadForm(csv, "items.csv", { headers: { Name: 3 } }),
        }),
        400,
      );
      assert.match(bad.message, /headers/);
      await assertSpoolEmpty(server);
    });

    await t.step(
      "a spreadsheet's headers are renamed, and its dry run names sheet rows",
      async () => {
        const rows = [["Id", "When"], [1, "2026-01-02"], [2, "not a date"], [3, "2026-01-04"]];
        const body = {
          table: { columns: [{ name: "id", type: "integer" }, { name: "day", type: "date" }] },
          headers: { Id: "id", When: "day" },
        };
        const before = await fingerprint(server);
        const dry = ok(
          await server.request("POST", "table/days/upload/excel?dry_run=true", {
            body: uploadForm(workbook(rows), "days.xlsx", body),
          }),
        );
        assert.equal(dry.inserted, 0);
        assert.equal(dry.table, null);
        assert.deepEqual(dry.records, []);
        assert.equal(dry.errors.length, 1);
        assert.equal(dry.errors[0].column, "day");
        assert.equal(dry.errors[0].sheet_row, 3);
        assert.equal(typeof dry.message, "string");
        assert.deepEqual(dry.headers, ["id", "day"]);
        await nothingChanged(before);
        const good = ok(
          await server.request("POST", "table/days/upload/excel?dry_run=1", {
            body: uploadForm(workbook(rows.filter((_, i) => i !== 2)), "days.xlsx", body),
          }),
        );
        assert.deepEqual(good.records, [{ id: 1, day: "2026-01-02" }, {
          id: 3,
          day: "2026-01-04",
        }]);
        await nothingChanged(before);
      },
    );

    await t.step(
      "an append's dry run names the file's headers, so that they can be mapped to columns",
      async () => {
        // items was loaded above, with columns price, name and qty.
        const before = await fingerprint(server);
        const unmatched = ok(
          await server.request("POST", "table/items/upload/csv?if_exists=append&dry_run=true", {
            body: uploadForm(csv, "items.csv"),
          }),
        );
        assert.equal(unmatched.inserted, 0);
        assert.match(unmatched.message, /Unit Price/);
        assert.deepEqual(unmatched.headers, ["Unit Price", "Name", "Qty"]);
        const mapped = ok(
          await server.request("POST", "table/items/upload/csv?if_exists=append&dry_run=true", {
            body: uploadForm(csv, "items.csv", { headers: { "Unit Price": "price" } }),
          }),
        );
        assert.deepEqual(mapped.errors, []);
        assert.equal(mapped.inserted, 150);
        assert.deepEqual(mapped.headers, ["price", "Name", "Qty"]);
        await nothingChanged(before);
        // Refused before the file is read: no headers to tell.
        const missing = ok(
          await server.request("POST", "table/items/upload/csv?if_exists=append&dry_run=true", {
            body: uploadForm(csv, "items.csv", { headers: { Price: "price" } }),
          }),
        );
        assert.match(missing.message, /no header "Price"/);
        assert.equal(missing.headers, undefined);
      },
    );

    await t.step(
      "a JSON dry run reports the rows it would refuse, with their numbers",
      async () => {
        const before = await fingerprint(server);
        const table = {
          columns: [
            { name: "id", type: "integer", is_nullable: false },
            { name: "n", type: "integer" },
          ],
        };
        const data = [{ id: 1, n: 1 }, { id: null, n: 2 }, { id: 3, n: "three" }];
        const dry = ok(
          await server.request("POST", "table/nums/upload/json?dry_run=true", {
            body: { table, data },
          }),
        );
        const real = errorOf(
          await server.request("POST", "table/nums/upload/json", { body: { table, data } }),
          422,
        );
        assert.deepEqual(dry.errors, real.details);
        assert.deepEqual(dry.errors.map((e: { row: number }) => e.row).sort(), [1, 2]);
        assert.deepEqual(dry.headers, ["id", "n"]);
        await nothingChanged(before);
      },
    );

    await t.step(
      "append and replace dry runs leave the table and its rows as they were",
      async () => {
        ok(
          await server.request("POST", "table/keyed", {
            body: {
              table: {
                columns: [
                  { name: "id", type: "integer" },
                  { name: "label", type: "varchar", default: "'none'" },
                ],
                constraints: { primary_key: { columns: ["id"] } },
              },
            },
          }),
        );
        ok(await server.request("POST", "table/keyed/records", { body: [{ id: 1, label: "a" }] }));
        const before = await fingerprint(server);
        const append = ok(
          await server.request("POST", "table/keyed/upload/json?if_exists=append&dry_run=true", {
            body: { data: [{ id: 2 }, { id: 3, label: "c" }] },
          }),
        );
        assert.equal(append.inserted, 2);
        assert.deepEqual(append.records[0], { id: 1, label: "a" });
        assert.equal(append.records.length, 3);
        const clash = ok(
          await server.request("POST", "table/keyed/upload/json?if_exists=append&dry_run=true", {
            body: { data: [{ id: 1 }] },
          }),
        );
        // A key that exists is a 409 naming the row when loaded: a dry run lists it.
        assert.equal(clash.inserted, 0);
        assert.deepEqual(
          clash.errors.map((e: { row: number; column: string }) => [e.row, e.column]),
          [[0, "id"]],
        );
        const replace = ok(
          await server.request("POST", "table/keyed/upload/json?if_exists=replace&dry_run=true", {
            body: { data: [{ x: true }] },
          }),
        );
        assert.deepEqual(replace.records, [{ x: true }]);
        await nothingChanged(before);
        errorOf(
          await server.request("POST", "table/keyed/upload/json?dry_run=true", {
            body: { data: [{ id: 9 }] },
          }),
          409,
        );
        errorOf(
          await server.request("POST", "table/keyed/upload/json?dry_run=maybe", { body: {} }),
          400,
        );
        await nothingChanged(before);
        // What the dry run showed is what the append stores.
        ok(
          await server.request("POST", "table/keyed/upload/json?if_exists=append", {
            body: { data: [{ id: 2 }, { id: 3, label: "c" }] },
          }),
        );
        const stored = ok(await server.request("GET", "table/keyed/records"));
        assert.deepEqual(stored.records, append.records);
      },
    );
  } finally {
    await server.dispose();
  }
});

Deno.test("PUT /table/{name}?dry_run=true answers the table, its changes and rows that do not fit", async (t) => {
  const server = await TestServer.start();
  try {
    const created = ok(
      await server.request("POST", "table/goods", {
        body: {
          table: {
            columns: [
              { name: "id", type: "integer", is_nullable: false },
              { name: "price", type: "varchar" },
              { name: "note", type: "varchar" },
              { name: "old", type: "integer" },
            ],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    ).table;
    ok(
      await server.request("POST", "table/goods/records", {
        body: [
          { id: 1, price: "1", note: "a", old: 1 },
          { id: 2, price: "2.5", note: "b", old: 2 },
          { id: 3, price: "abc", note: null, old: 3 },
        ],
      }),
    );
    const [id, price, note] = created.columns;
    const before = await fingerprint(server);
    const kept = { id: id.id, name: "id", type: id.type, is_nullable: false };

    await t.step("a change the rows allow: the table as it would be, nothing changed", async () => {
      const wanted = {
        table: {
          name: "wares",
          columns: [
            kept,
            { id: note.id, name: "remark", type: note.type },
            { id: price.id, name: "price", type: price.type, default: "'0'" },
            { name: "flag", type: "boolean", default: "false" },
          ],
        },
      };
      const dry = ok(await server.request("PUT", "table/goods?dry_run=true", { body: wanted }));
      assert.equal(dry.dry_run, true);
      assert.deepEqual(dry.errors, []);
      assert.deepEqual(
        dry.changes.map((c: { change: string; column?: string }) => [c.change, c.column ?? null]),
        [
          ["rename_table", null],
          ["rename_column", "remark"],
          ["set_default", "price"],
          ["add_column", "flag"],
          ["drop_column", "old"],
          ["reorder_columns", null],
        ],
      );
      assert.equal(await fingerprint(server), before);
      errorOf(await server.request("GET", "table/wares"), 404);
      const real = ok(await server.request("PUT", "table/goods", { body: wanted }));
      assert.deepEqual(real.table, dry.table);
    });

    await t.step("a retype some rows refuse: those rows, and the changes planned", async () => {
      const current = ok(await server.request("GET", "table/wares")).table;
      const state = await fingerprint(server);
      const wanted = {
        table: {
          columns: current.columns.map((c: { name: string }) =>
            c.name === "price" ? { ...c, type: "double" } : c
          ),
        },
      };
      const dry = ok(await server.request("PUT", "table/wares?dry_run=1", { body: wanted }));
      const real = errorOf(await server.request("PUT", "table/wares", { body: wanted }), 422);
      assert.equal(dry.table, null);
      assert.deepEqual(dry.errors, real.details);
      assert.ok(dry.errors.length > 0);
      assert.equal(dry.message, real.message);
      assert.deepEqual(dry.changes.map((c: { change: string }) => c.change), ["retype_column"]);
      assert.equal(dry.changes[0].column, "price");
      assert.equal(await fingerprint(server), state);
    });

    await t.step("an unchanged table, a stale If-Match and a bad dry_run", async () => {
      const read = await server.request("GET", "table/wares");
      const same = ok(
        await server.request("PUT", "table/wares?dry_run=true", {
          body: { table: read.body.table },
        }),
      );
      assert.deepEqual([same.table, same.changes], [read.body.table, []]);
      const stale = errorOf(
        await server.request("PUT", "table/wares?dry_run=true", {
          body: { table: { name: "other" } },
          headers: { "if-match": '"not-the-tag"' },
        }),
        409,
      );
      assert.equal(stale.type, "edit_conflict");
      errorOf(
        await server.request("PUT", "table/wares?dry_run=perhaps", { body: { table: {} } }),
        400,
      );
    });
  } finally {
    await server.dispose();
  }
});

/** A 43-character text of base64url that no ticket was issued as. */
const NO_TICKET = "A".repeat(43);

Deno.test("download tickets: single use, bound to one export, no token in the URL", async (t) => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/many/upload/csv", {
        body: uploadForm(csvRows(15_000), "many.csv"),
      }),
    );
    const redeem = (url: string, method = "GET") => server.request(method, url, { token: null });

    await t.step(
      "a ticket streams the export it was issued for, once, with every row",
      async () => {
        const query = "select=id,s&g=lt.50&order=id.desc&timezone_offset=2";
        for (const format of ["csv", "ndjson", "json"]) {
          const issued = ok(
            await server.request("POST", `table/many/records/${format}/ticket?${query}`),
          );
          assert.match(issued.ticket, /^[A-Za-z0-9_-]{43}$/);
          assert.equal(issued.url, `/api/v1/download/${issued.ticket}`);
          assert.ok(!issued.url.includes(server.token));
          const expires = Date.parse(issued.expires_at) - Date.now();
          assert.ok(expires > 0 && expires <= 60_000, `${expires}`);
          const file = await redeem(issued.url);
          assert.equal(file.status, 200, file.text);
          const direct = await server.request("GET", `table/many/records/${format}?${query}`);
          assert.equal(file.text, direct.text, format);
          assert.equal(file.headers.get("content-type"), direct.headers.get("content-type"));
          assert.match(
            file.headers.get("content-disposition") ?? "",
            /^attachment; filename="many_/,
          );
          assert.equal(file.headers.get("cache-control"), "no-store");
          const again = await redeem(issued.url);
          assert.equal(again.status, 404);
          assert.match(again.body.error.message, /unknown, used or expired/);
        }
        const all = ok(await server.request("POST", "table/many/records/csv/ticket"));
        const text = (await redeem(all.url)).text;
        // No row cap: every row of the table and the header.
        assert.equal(text.trimEnd().split("\n").length, 15_001);
        const parquet = ok(
          await server.request("POST", "table/many/records/parquet/ticket?g=eq.3"),
        );
        const bytes = await fetch(`${server.base}${parquet.url}`).then((r) => r.bytes());
        assert.equal(new TextDecoder().decode(bytes.slice(0, 4)), "PAR1");
      },
    );

    await t.step("HEAD looks at a ticket without using it", async () => {
      const issued = ok(await server.request("POST", "table/many/records/ndjson/ticket"));
      const head = await redeem(issued.url, "HEAD");
      assert.equal(head.status, 200);
      assert.match(head.headers.get("content-disposition") ?? "", /\.ndjson"$/);
      assert.equal((await redeem(issued.url)).status, 200);
      assert.equal((await redeem(issued.url, "HEAD")).status, 404);
    });

    await t.step("a wrong or malformed ticket is 404, and changes nothing", async () => {
      for (const ticket of [NO_TICKET, "short", `${"A".repeat(42)}=`, "A".repeat(44)]) {
        const answer = await redeem(`/api/v1/download/${ticket}`);
        assert.equal(answer.status, 404, ticket);
        assert.equal(answer.body.error.type, "not_found");
      }
    });

    await t.step("issuing checks the export and the token as the export would", async () => {
      errorOf(await server.request("POST", "table/many/records/csv/ticket?nobody=eq.1"), 400);
      errorOf(await server.request("POST", "table/many/records/csv/ticket?limit=5"), 400);
      errorOf(await server.request("POST", "table/none/records/csv/ticket"), 404);
      errorOf(await server.request("POST", "table/many/records/xml/ticket"), 404);
      errorOf(await server.request("POST", "table/many/records/csv/ticket", { token: null }), 401);
      const templatesOnly = await mint({ scope: "templates:read" });
      errorOf(
        await server.request("POST", "table/many/records/csv/ticket", { token: templatesOnly }),
        403,
      );
      const salesOnly = await mint({ scope: "tables:read", schemas: ["sales"] });
      errorOf(
        await server.request("POST", "table/many/records/csv/ticket", { token: salesOnly }),
        403,
      );
      const reader = await mint({ scope: "tables:read", schemas: ["public"] });
      const issued = ok(
        await server.request("POST", "table/many/records/csv/ticket?g=eq.7", { token: reader }),
      );
      const file = await redeem(issued.url);
      assert.equal(file.status, 200);
      assert.equal(file.text.trimEnd().split("\n").length, 151);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("download tickets expire a minute after they are issued, and stay out of logs", async () => {
  let now = Date.now();
  const lines: string[] = [];
  const env = await engineEnv();
  const run = async (store: Store, dir: string) => {
    const app = createApp({
      store,
      verifier: await createVerifier({ key: { kind: "hmac", secret: TEST_SECRET } }),
      logger: createLogger("info", (line) => lines.push(line)),
      maxJsonBytes: 1 << 20,
      maxUploadBytes: 1 << 24,
      maxSheetRows: 1000,
      maxSheetBytes: 1 << 24,
      spoolDir: dir,
      metricsAccess: "token",
      bodyIdleMs: 30_000,
      queryTimeoutMs: 30_000,
      corsOrigins: [],
      now: () => now,
    });
    const authorization = `Bearer ${await mint({ scope: ALL_SCOPES })}`;
    const send = (method: string, path: string, body?: unknown) =>
      app.request(`/api/v1/${path}`, {
        method,
        headers: body === undefined
          ? { authorization }
          : { authorization, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    assert.equal(
      (await send("POST", "table/t/upload/json", { data: [{ a: 1 }, { a: 2 }] })).status,
      200,
    );
    const ticket = async () =>
      (await (await send("POST", "table/t/records/csv/ticket")).json()).url;
    const late = await ticket();
    const inTime = await ticket();
    now += 59_000;
    const early = await app.request(inTime);
    assert.equal(early.status, 200);
    assert.equal(await early.text(), "a\n1\n2\n");
    now += 2_000;
    const expired = await app.request(late);
    assert.equal(expired.status, 404);
    await expired.body?.cancel();
    // A ticket is a credential: the request log shows its route, not the ticket.
    const logged = lines.join("\n");
    assert.match(logged, /\/api\/v1\/download\/…/);
    for (const url of [late, inTime]) assert.ok(!logged.includes(url.split("/").at(-1)!));
  };
  if (env.DATABASE_URL) {
    const dir = await Deno.makeTempDir();
    const store = await openPostgresStore({ url: env.DATABASE_URL });
    try {
      await run(store, dir);
    } finally {
      await store.close();
      await dropDatabase(env.DATABASE_URL);
      await Deno.remove(dir, { recursive: true });
    }
  } else {
    await withTempStore(run);
  }
});
