import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import { parseReadQuery } from "../../catalog/filters.ts";
import type { ColumnSpec } from "../../catalog/model.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";
import type { DuckDBStore } from "./duckdb_store.ts";

/** Creates `name` with `columns` (keyed on the first when `keyed`) and loads `rows`. */
async function load(
  store: DuckDBStore,
  name: string,
  columns: ColumnSpec[],
  rows: Record<string, unknown>[],
  keyed = true,
): Promise<void> {
  const ref = { schema: "public", name };
  const plan = planTable(ref, {
    columns,
    constraints: keyed ? { primary_key: { columns: [columns[0]!.name] } } : {},
  });
  const text = rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
  await store.records.upload(ref, {
    rows: rows.length,
    form: "objects",
    keys: columns.map((c) => c.name),
    keysComplete: true,
    firstRowOfLength: new Map(),
    hasData: true,
    stream: () => new Blob([text]).stream(),
  }, { plan, ifExists: "fail" });
}

/** Every page of a cursor walk of `query` over `name`, `limit` rows a page, parsed. */
async function walk(
  store: DuckDBStore,
  name: string,
  query: string,
  limit: number,
): Promise<unknown[]> {
  const ref = { schema: "public", name };
  const table = await store.tables.get(ref);
  const read = parseReadQuery(new URLSearchParams(query), table.columns);
  const rows: unknown[] = [];
  let after: string | null | undefined = "";
  while (typeof after === "string") {
    const page = await store.records.read(ref, 0, limit, { read, after });
    rows.push(...JSON.parse(page.json));
    after = page.next;
  }
  return rows;
}

Deno.test("readRecords() walks a table of many columns by cursor, rendered in slices", async () => {
  await withTempStore(async (store) => {
    const columns: ColumnSpec[] = [
      { name: "id", type: "integer", is_nullable: false },
      ...Array.from({ length: 140 }, (_, i) => ({ name: `c ${i}`, type: "integer" })),
    ];
    const rows = Array.from({ length: 45 }, (_, r) => {
      const row: Record<string, unknown> = { id: r };
      for (let i = 0; i < 140; i++) row[`c ${i}`] = (r * i) % 7;
      return row;
    });
    await load(store, "wide", columns, rows);
    const ref = { schema: "public", name: "wide" };
    const table = await store.tables.get(ref);
    const query = "order=c%200.desc,c%201&c%202=lt.5";
    const read = parseReadQuery(new URLSearchParams(query), table.columns);
    const whole = await store.records.read(ref, 0, 1000, { read });
    assert.equal(whole.total, rows.filter((r) => (r["c 2"] as number) < 5).length);
    assert.deepEqual(await walk(store, "wide", query, 4), JSON.parse(whole.json));
    assert.deepEqual(await walk(store, "wide", `${query}&count=none`, 9), JSON.parse(whole.json));
    // select keeps to its columns, in its order, on the sliced path too.
    const selected = Array.from({ length: 120 }, (_, i) => `"c ${119 - i}"`).join(",");
    const picked = parseReadQuery(
      new URLSearchParams(`select=${encodeURIComponent(selected)}&id=eq.3`),
      table.columns,
    );
    const page = await store.records.read(ref, 0, 10, { read: picked, after: "" });
    const [record] = JSON.parse(page.json);
    assert.equal(Object.keys(record)[0], "c 119");
    assert.equal(Object.keys(record).length, 120);
    assert.equal(record["c 5"], 15 % 7);
    assert.equal(page.next, null);
  });
});

Deno.test("readRecords() walks by every kind of key a column can hold", async () => {
  await withTempStore(async (store) => {
    const columns: ColumnSpec[] = [
      { name: "n", type: "integer", is_nullable: false },
      { name: "big", type: "hugeint" },
      { name: "dec", type: "decimal(18,6)" },
      { name: "f", type: "double" },
      { name: "t", type: "timestamp with time zone" },
      { name: "d", type: "date" },
      { name: "b", type: "blob" },
      { name: "s", type: "varchar" },
      { name: "u", type: "uuid" },
      { name: "l", type: "integer[]" },
    ];
    const rows = Array.from({ length: 60 }, (_, i) => ({
      n: i,
      big: i % 4 === 0 ? null : `${170141183460469231731687303715884105727n - BigInt(i % 9)}`,
      dec: i % 5 === 0 ? null : `${(i % 8) * 1.000001}`,
      f: i % 6 === 0 ? null : (i % 7) / 3,
      t: i % 7 === 0 ? null : `2024-03-0${1 + (i % 5)}T10:00:0${i % 3}.123456Z`,
      d: i % 8 === 0 ? null : `2024-0${1 + (i % 4)}-01`,
      b: i % 9 === 0 ? null : btoa(String.fromCharCode(i % 5, 0, 255)),
      s: i % 10 === 0 ? null : `text, "quoted" ${i % 6}`,
      u: i % 3 === 0 ? null : `00000000-0000-0000-0000-00000000000${i % 4}`,
      l: i % 11 === 0 ? null : [i % 3, i % 2],
    }));
    await load(store, "kinds", columns, rows, false);
    const ref = { schema: "public", name: "kinds" };
    const table = await store.tables.get(ref);
    for (const column of ["big", "dec", "f", "t", "d", "b", "s", "u", "l"]) {
      for (const modifiers of ["", ".desc", ".asc.nullsfirst", ".desc.nullslast"]) {
        const query = `order=${column}${modifiers}`;
        const read = parseReadQuery(new URLSearchParams(query), table.columns);
        const whole = JSON.parse((await store.records.read(ref, 0, 1000, { read })).json);
        assert.equal(whole.length, rows.length);
        assert.deepEqual(await walk(store, "kinds", query, 7), whole, query);
      }
    }
  });
});

Deno.test("summarizeRecords() gives figures of columns of every kind, many at once", async () => {
  await withTempStore(async (store) => {
    const columns: ColumnSpec[] = [
      { name: "id", type: "integer", is_nullable: false },
      { name: "m", type: "map(varchar, integer)" },
      { name: "st", type: "struct(a integer, b varchar)" },
      { name: "l", type: "varchar[]" },
      { name: "j", type: "json" },
      { name: "b", type: "blob" },
      { name: "i", type: "interval" },
      { name: "big", type: "ubigint" },
      ...Array.from({ length: 30 }, (_, k) => ({ name: `x${k}`, type: "smallint" })),
    ];
    const rows = Array.from({ length: 20 }, (_, r) => {
      const row: Record<string, unknown> = {
        id: r,
        m: { k: r },
        st: { a: r, b: `s${r}` },
        l: [`a${r % 3}`],
        j: { r },
        b: btoa(`b${r}`),
        i: `${r} minutes`,
        big: "18446744073709551615",
      };
      for (let k = 0; k < 30; k++) row[`x${k}`] = r * k;
      return row;
    });
    await load(store, "kinds", columns, rows);
    const ref = { schema: "public", name: "kinds" };
    const summary = await store.records.summarize(ref, [
      { column: "id", op: "lt", negated: false, value: "10" },
    ]);
    assert.equal(summary.rows, 10);
    assert.equal(summary.columns.length, columns.length);
    const of = (name: string) => summary.columns.find((c) => c.name === name)!;
    assert.deepEqual([of("m").min, of("m").max, of("m").count], [null, null, 10]);
    assert.deepEqual(of("st").min, { a: 0, b: "s0" });
    assert.equal(of("b").max, btoa("b9"));
    assert.equal(of("big").max, "18446744073709551615");
    assert.equal(of("big").avg, 18446744073709551615);
    assert.equal(of("x29").max, 9 * 29);
    assert.equal(of("x29").avg, 4.5 * 29);
    assert.equal(of("i").avg, null);
  });
});
