import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { Table } from "../../catalog/model.ts";
import type { KeyColumn } from "../../catalog/rows.ts";
import { APPEND_ROWS, appendRows, plainRows } from "./append.ts";
import { insertRows } from "./rows.ts";
import { withTempStore } from "../../../tests/helpers/store.ts";

/** JSON value texts by column type, and whether the appender path should take each. */
const CASES: Record<string, [string, boolean][]> = {
  "boolean": [["true", true], ["false", true], ["1", false], ["2", false], ['"true"', false]],
  "tinyint": [
    ["127", true],
    ["-128", true],
    ["128", false],
    ["1.0", true],
    ["1e2", true],
    [
      "-0",
      true,
    ],
    ["1.5", false],
    ['"7"', false],
    ["true", false],
  ],
  "smallint": [["32767", true], ["-32769", false]],
  "integer": [["2147483647", true], ["-2147483648", true], ["2147483648", false]],
  "utinyint": [["255", true], ["-1", false]],
  "usmallint": [["65535", true], ["65536", false]],
  "uinteger": [["4294967295", true], ["-1", false]],
  "bigint": [
    ["9007199254740991", true],
    ["-9007199254740991", true],
    [
      "9007199254740993",
      false,
    ],
    ["1e15", true],
    ["12345678901234567890", false],
  ],
  "ubigint": [["0", true], ["9007199254740991", true], ["-5", false]],
  "hugeint": [["-9007199254740991", true], ["170141183460469231731687303715884105727", false]],
  "double": [
    ["0.1", true],
    ["1.7976931348623157e308", true],
    ["5e-324", true],
    [
      "2.2250738585072011e-308",
      true,
    ],
    ["9007199254740993", true],
    ["-0.0", true],
    ["123456789012345678901234567890", true],
    [
      "1e400",
      false,
    ],
    ['"1.5"', false],
  ],
  "float": [["0.1", true], ["3.4028234663852886e38", true], ["3.5e38", false], [
    "1e-46",
    true,
  ], ["16777217", true]],
  "varchar": [
    ['""', true],
    ['"héllo, wörld"', true],
    ['"emoji 😀"', true],
    [
      '"tab\\t quote \\" backslash \\\\ slash \\/"',
      true,
    ],
    ['"\\u0000"', false],
    ['"\\ud800"', false],
    ["42", false],
    ["true", false],
  ],
  "date": [
    ['"2026-01-01"', true],
    ['"0001-01-01"', true],
    ['"9999-12-31"', true],
    [
      '"2024-02-29"',
      true,
    ],
    ['"1969-12-31"', true],
    ['"2023-02-29"', false],
    ['"2026-1-01"', false],
    [
      '"2026-01-01T00:00:00"',
      false,
    ],
    ["20260101", false],
  ],
  "timestamp": [
    ['"2026-01-01T00:00:00"', true],
    ['"2026-01-01 12:34:56.123456"', true],
    [
      '"1900-01-01T00:00:00.5"',
      true,
    ],
    ['"1969-12-31T23:59:59.999"', true],
    ['"2026-01-01T24:00:00"', false],
    [
      '"2026-01-01T00:00:00Z"',
      false,
    ],
    ['"2026-01-01T00:00:00.1234567"', false],
  ],
  "timestamptz": [
    ['"2026-01-01T00:00:00Z"', true],
    ['"2026-06-30T23:59:59.999999+14:00"', true],
    [
      '"2026-01-01T00:00:00-12:00"',
      true,
    ],
    ['"2026-01-01 05:45:00+05:45"', true],
    ['"1969-12-31T23:59:59.9Z"', true],
    [
      '"2026-01-01T00:00:00"',
      true,
    ],
    ['"2026-03-01T10:00:00+02"', false],
    ['"2026-01-01T00:00:00+15:59"', true],
    ['"2026-01-01T00:00:00+16:00"', false],
    ['"2026-01-01T00:00:60Z"', false],
    [
      '"2026-01-01T00:00:00 Europe/Berlin"',
      false,
    ],
  ],
};

Deno.test("plainRows() and appendRows() store what read_json stores, or leave the rows to it", async () => {
  await withTempStore(async (store, dir) => {
    for (const [type, cases] of Object.entries(CASES)) {
      const tables: Table[] = [];
      for (const name of ["appended", "read"]) {
        const ref = { schema: "public", name: `${name}_${type}` };
        const columns = [{ name: "id", type: "integer" }, { name: "v", type }];
        tables.push(
          (await store.tables.create(planTable(ref, { columns }), { ifNotExists: false }))
            .table,
        );
      }
      const [appended, read] = tables as [Table, Table];
      const mapping = (table: Table): KeyColumn[] =>
        table.columns.map((column) => ({ key: column.name, column }));
      const taken: number[] = [];
      for (const [id, [text, plain]] of cases.entries()) {
        const line = `{"id":${id},"v":${text}}\n`;
        const rows = plainRows(appended, mapping(appended), [new TextEncoder().encode(line)], 1);
        assert.equal(rows !== undefined, plain, `${type} ${text}: taken by the appender path`);
        if (!rows) continue;
        await store.database.transaction((s) => appendRows(s, appended, rows));
        const path = `${dir}/${type}-${id}.json`;
        await Deno.writeTextFile(path, line);
        await store.database.transaction((s) =>
          insertRows(s, read, { path, rows: 1 }, mapping(read))
        );
        taken.push(id);
      }
      const dump = (table: Table) =>
        store.database.withSession((s) =>
          s.rows(`SELECT id, v::VARCHAR AS v FROM public."${table.name}" ORDER BY id`)
        );
      const [got, want] = [await dump(appended), await dump(read)];
      assert.deepEqual(got.map((r) => r.id), taken, type);
      assert.deepEqual(got, want, type);
    }
  });
});

Deno.test("plainRows() leaves out columns with defaults, repeated keys and other row counts", () => {
  const id = { id: 1, name: "id", type: "BIGINT", default: null, is_nullable: false };
  const at = { id: 2, name: "at", type: "TIMESTAMP", default: "now()", is_nullable: true };
  const body = (text: string) => [new TextEncoder().encode(text)];
  const mapping = [{ key: "id", column: id }];
  assert.equal(plainRows({ columns: [id, at] }, mapping, body('{"id":1}\n'), 1), undefined);
  assert.deepEqual(plainRows({ columns: [id] }, mapping, body('{"id":1}\n'), 1)?.values, [1n]);
  assert.equal(plainRows({ columns: [id] }, mapping, body('{"id":1,"id":2}\n'), 1), undefined);
  assert.equal(plainRows({ columns: [id] }, mapping, body('{"id":1}\n'), 2), undefined);
  assert.deepEqual(
    plainRows({ columns: [id] }, mapping, body('{"id":1,"x":{"a":[1,{"b":2}]}}\n'), 1)?.values,
    [1n],
  );
});

Deno.test("appendRows() refuses a description whose column types are not the table's, every time", async () => {
  await withTempStore(async (store) => {
    const ref = { schema: "public", name: "t" };
    const columns = [{ name: "id", type: "integer" }, { name: "v", type: "varchar" }];
    const { table } = await store.tables.create(planTable(ref, { columns }), {
      ifNotExists: false,
    });
    // The same names, with v described as a double: the appender's column is VARCHAR.
    const wrong: Table = {
      ...table,
      columns: table.columns.map((c) => c.name === "v" ? { ...c, type: "DOUBLE" } : c),
    };
    const line = (id: number) => [new TextEncoder().encode(`{"id":${id},"v":1.5}\n`)];
    const mapping = (t: Table): KeyColumn[] =>
      t.columns.map((column) => ({ key: column.name, column }));
    const rows = plainRows(wrong, mapping(wrong), line(1), 1)!;
    assert.ok(rows, "the wrong description's rows are plain");
    for (let attempt = 0; attempt < 2; attempt++) {
      await assert.rejects(
        store.database.transaction((s) => appendRows(s, wrong, rows)),
        /differ from its description/,
      );
    }
    const right = plainRows(
      table,
      mapping(table),
      [new TextEncoder().encode('{"id":2,"v":"x"}\n')],
      1,
    )!;
    // Matched as a frozen (cached) description, the table still refuses other types: rows
    // described otherwise, or another description of the same name.
    const cached = Object.freeze(table);
    for (let attempt = 0; attempt < 2; attempt++) {
      await store.database.transaction((s) => appendRows(s, cached, right));
      for (const description of [cached, wrong]) {
        await assert.rejects(
          store.database.transaction((s) => appendRows(s, description, rows)),
          /differ from its description/,
        );
      }
    }
    const stored = await store.database.withSession((s) =>
      s.rows(`SELECT id, v FROM public.t ORDER BY id`)
    );
    assert.deepEqual(stored, [{ id: 2, v: "x" }, { id: 2, v: "x" }]);
  });
});

Deno.test("appendRows() outside a transaction commits all its rows or none, up to APPEND_ROWS", async () => {
  await withTempStore(async (store) => {
    const ref = { schema: "public", name: "t" };
    const columns = [{ name: "id", type: "integer" }];
    const plan = planTable(ref, { columns, constraints: { primary_key: { columns: ["id"] } } });
    const { table } = await store.tables.create(plan, { ifNotExists: false });
    const mapping: KeyColumn[] = [{ key: "id", column: table.columns[0]! }];
    const body = (
      ids: number[],
    ) => [new TextEncoder().encode(ids.map((id) => `{"id":${id}}\n`).join(""))];
    const count = () =>
      store.database.withSession(async (s) =>
        (await s.rows("SELECT count(*)::INTEGER AS n FROM public.t"))[0]?.n
      );
    // The last row repeats the first key: DuckDB has buffered many vectors by then, and
    // would have committed some on its own past its flush threshold.
    const ids = Array.from({ length: APPEND_ROWS }, (_, i) => i);
    ids[APPEND_ROWS - 1] = 0;
    const clashing = plainRows(table, mapping, body(ids), APPEND_ROWS)!;
    await assert.rejects(
      store.database.withSession((s) => appendRows(s, table, clashing)),
      /duplicate key|primary key/i,
    );
    assert.equal(await count(), 0);
    ids[APPEND_ROWS - 1] = APPEND_ROWS;
    const distinct = plainRows(table, mapping, body(ids), APPEND_ROWS)!;
    await store.database.withSession((s) => appendRows(s, table, distinct));
    assert.equal(await count(), APPEND_ROWS);
  });
});
