import assert from "node:assert/strict";
import * as XLSX from "xlsx";
import { ENGINE } from "./helpers/engine.ts";
import {
  assertSpoolEmpty,
  cellsOf,
  errorOf,
  ok,
  snapshot,
  TestServer,
  uploadForm as form,
} from "./helpers/server.ts";

const FIXTURES = new URL("./fixtures/", import.meta.url);

async function fixture(name: string): Promise<Uint8Array> {
  return await Deno.readFile(new URL(name, FIXTURES));
}

async function records(server: TestServer, table: string): Promise<Record<string, unknown>[]> {
  return ok(await server.request("GET", `table/${table}/records?limit=10000`)).records;
}

/** The People sheet as every office format of the fixture gives it. */
const PEOPLE = [
  {
    Name: "Ada Lovelace",
    Born: "1815-12-10",
    "Last Login": "2024-03-01T09:30:00.000000",
    Zip: "01234",
    Score: 91.5,
    "Double Score": 183,
    Città: "Zürich",
    Active: true,
  },
  {
    Name: "Grace Hopper",
    Born: "1906-12-09",
    "Last Login": "2024-03-02T17:05:30.000000",
    Zip: "00042",
    Score: 88,
    "Double Score": 176,
    Città: "東京",
    Active: false,
  },
  {
    Name: "Émilie du Châtelet",
    Born: "1706-12-17",
    "Last Login": null,
    Zip: "10001",
    Score: 79.25,
    "Double Score": 158.5,
    Città: "Paris",
    Active: true,
  },
  {
    Name: "Hedy Lamarr",
    Born: "1914-11-09",
    "Last Login": "2024-03-04T00:00:00.000000",
    Zip: "2200",
    Score: null,
    "Double Score": 0,
    Città: null,
    Active: false,
  },
];

Deno.test("upload/excel reads office files: header, types, dates, formulas, text numbers", async (t) => {
  const server = await TestServer.start();
  try {
    for (const name of ["workbook.xlsx", "workbook.xls", "workbook.ods", "people.csv"]) {
      await t.step(`${name} without a definition infers the table`, async () => {
        const table = `people_${name.replace(".", "_")}`;
        const answer = ok(
          await server.request("POST", `table/${table}/upload/excel`, {
            body: form(await fixture(name), name),
          }),
        );
        assert.equal(answer.inserted, 4);
        const types = Object.fromEntries(
          answer.table.columns.map((c: { name: string; type: string }) => [c.name, c.type]),
        );
        // Inferred as on DuckDB, then PostgreSQL's name of each type (docs/api.md).
        assert.deepEqual(
          types,
          ENGINE === "duckdb"
            ? {
              Name: "VARCHAR",
              Born: "DATE",
              "Last Login": "TIMESTAMP",
              Zip: "VARCHAR",
              Score: "DOUBLE",
              "Double Score": "DOUBLE",
              Città: "VARCHAR",
              Active: "BOOLEAN",
            }
            : {
              Name: "character varying",
              Born: "date",
              "Last Login": "timestamp without time zone",
              Zip: "character varying",
              Score: "double precision",
              "Double Score": "double precision",
              Città: "character varying",
              Active: "boolean",
            },
        );
        assert.deepEqual(await records(server, table), PEOPLE);
      });
    }

    await t.step(
      "a definition in the body part types the columns; sheet by name or index",
      async () => {
        const definition = {
          table: {
            columns: [
              { name: "Item", type: "varchar", is_nullable: false },
              { name: "Unit Price", type: "numeric(10,2)" },
              { name: "Qty", type: "integer" },
              { name: "Note", type: "varchar", default: "'none'" },
            ],
          },
        };
        for (const sheet of ["Prices", "1"]) {
          const answer = ok(
            await server.request("POST", `table/prices_${sheet}/upload/excel?sheet=${sheet}`, {
              body: form(await fixture("workbook.xlsx"), "workbook.xlsx", definition),
            }),
          );
          assert.equal(answer.inserted, 2);
          assert.deepEqual(await records(server, `prices_${sheet}`), [
            { Item: "Tea", "Unit Price": 3.5, Qty: 10, Note: "none" },
            { Item: "Coffee", "Unit Price": 4.25, Qty: 3, Note: "none" },
          ]);
        }
        const missing = errorOf(
          await server.request("POST", "table/prices_x/upload/excel?sheet=Nope", {
            body: form(await fixture("workbook.xlsx"), "workbook.xlsx"),
          }),
          404,
        );
        assert.match(missing.message, /"Prices"/);
      },
    );

    await t.step(
      "headers without a column and required columns not in the sheet are 422",
      async () => {
        const before = await snapshot(server);
        const answer = errorOf(
          await server.request("POST", "table/mismatch/upload/excel", {
            body: form(await fixture("workbook.xlsx"), "workbook.xlsx", {
              table: {
                columns: [
                  { name: "name", type: "varchar" },
                  { name: "born", type: "date" },
                  { name: "Email", type: "varchar", is_nullable: false },
                ],
              },
            }),
          }),
          422,
        );
        const columns = (answer.details as { column: string }[]).map((d) => d.column).sort();
        assert.deepEqual(columns, [
          "Active",
          "Città",
          "Double Score",
          "Email",
          "Last Login",
          "Score",
          "Zip",
        ]);
        assert.equal(await snapshot(server), before);
      },
    );

    await t.step("a value that does not fit names its record and sheet row", async () => {
      const answer = errorOf(
        await server.request("POST", "table/badvalue/upload/excel", {
          body: form(await fixture("workbook.xlsx"), "workbook.xlsx", {
            table: {
              columns: PEOPLE_COLUMNS.map((c) => c.name === "Zip" ? { ...c, type: "date" } : c),
            },
          }),
        }),
        422,
      );
      const details = answer.details as { row: number; column: string; sheet_row: number }[];
      assert.deepEqual(details.map((d) => [d.row, d.column, d.sheet_row]), [
        [0, "Zip", 3],
        [1, "Zip", 5],
        [2, "Zip", 6],
        [3, "Zip", 7],
      ]);
      errorOf(await server.request("GET", "table/badvalue"), 404);
    });

    await t.step("if_exists: fail, append and replace", async () => {
      const file = await fixture("workbook.ods");
      const send = (mode: string) =>
        server.request("POST", `table/modes/upload/excel?if_exists=${mode}`, {
          body: form(file, "workbook.ods"),
        });
      ok(await send("fail"));
      errorOf(await send("fail"), 409);
      assert.equal(ok(await send("append")).inserted, 4);
      assert.equal((await records(server, "modes")).length, 8);
      ok(await send("replace"));
      assert.equal((await records(server, "modes")).length, 4);
    });
    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});

const PEOPLE_COLUMNS = [
  { name: "Name", type: "varchar" },
  { name: "Born", type: "date" },
  { name: "Last Login", type: "timestamp" },
  { name: "Zip", type: "varchar" },
  { name: "Score", type: "double" },
  { name: "Double Score", type: "double" },
  { name: "Città", type: "varchar" },
  { name: "Active", type: "boolean" },
];

Deno.test("upload/excel reads SheetJS-written xlsb, xlsm and 1904-dated workbooks", async () => {
  const server = await TestServer.start();
  try {
    const rows = [
      ["  id ", "when", "label"],
      [1, new Date(Date.UTC(2025, 5, 30)), "0042"],
      [],
      [2, new Date(Date.UTC(2025, 6, 1, 12, 30)), "x"],
    ];
    for (const bookType of ["xlsb", "xlsm", "xlsx"] as const) {
      for (const date1904 of [false, true]) {
        const sheet = XLSX.utils.aoa_to_sheet(rows, {
          cellDates: true,
          UTC: true,
          dateNF: "yyyy-mm-dd hh:mm",
        });
        const book = XLSX.utils.book_new();
        XLSX.utils.book_append_sheet(book, sheet, "Data");
        book.Workbook = { WBProps: { date1904 } };
        const bytes = XLSX.write(book, { type: "array", bookType }) as ArrayBuffer;
        const table = `gen_${bookType}_${date1904}`;
        const answer = ok(
          await server.request("POST", `table/${table}/upload/excel`, {
            body: form(new Uint8Array(bytes), `data.${bookType}`),
          }),
        );
        assert.equal(answer.inserted, 2, table);
        assert.deepEqual(await records(server, table), [
          { id: 1, when: "2025-06-30T00:00:00.000000", label: "0042" },
          { id: 2, when: "2025-07-01T12:30:00.000000", label: "x" },
        ], table);
      }
    }
    const headerOnly = XLSX.utils.book_new();
    XLSX.utils.book_append_sheet(headerOnly, XLSX.utils.aoa_to_sheet([["a", "b"]]), "S");
    const empty = ok(
      await server.request("POST", "table/header_only/upload/excel", {
        body: form(
          new Uint8Array(
            XLSX.write(headerOnly, { type: "array", bookType: "xlsx" }) as ArrayBuffer,
          ),
          "h.xlsx",
        ),
      }),
    );
    assert.equal(empty.inserted, 0);
    assert.deepEqual(empty.table.columns.map((c: { name: string }) => c.name), ["a", "b"]);
  } finally {
    await server.dispose();
  }
});

Deno.test("upload/csv: DuckDB's reader with detected delimiter and quoting", async (t) => {
  const server = await TestServer.start();
  try {
    const csv = new TextEncoder().encode(
      'id;" full name ";price;when\n1;"Doe; Jane";3.50;2025-01-02\n2;"O""Brien";4;2025-02-03\n',
    );
    await t.step("types inferred without a definition", async () => {
      const answer = ok(
        await server.request("POST", "table/csv_a/upload/csv", { body: form(csv, "a.csv") }),
      );
      assert.equal(answer.inserted, 2);
      assert.deepEqual(
        answer.table.columns.map((c: { name: string; type: string }) => [c.name, c.type]),
        ENGINE === "duckdb"
          ? [["id", "BIGINT"], ["full name", "VARCHAR"], ["price", "DOUBLE"], ["when", "DATE"]]
          : [
            ["id", "bigint"],
            ["full name", "character varying"],
            ["price", "double precision"],
            ["when", "date"],
          ],
      );
      assert.deepEqual(await records(server, "csv_a"), [
        { id: 1, "full name": "Doe; Jane", price: 3.5, when: "2025-01-02" },
        { id: 2, "full name": 'O"Brien', price: 4, when: "2025-02-03" },
      ]);
    });

    await t.step("a definition's types, header matched by trimmed name in any order", async () => {
      const answer = ok(
        await server.request("POST", "table/csv_b/upload/csv", {
          body: form(csv, "b.csv", {
            table: {
              columns: [
                { name: "when", type: "varchar" },
                { name: "price", type: "decimal(8,2)" },
                { name: "full name", type: "varchar" },
                { name: "id", type: "integer", is_nullable: false },
              ],
              constraints: { primary_key: { columns: ["id"] } },
            },
          }),
        }),
      );
      assert.equal(answer.inserted, 2);
      assert.deepEqual((await records(server, "csv_b"))[0], {
        when: "2025-01-02",
        price: 3.5,
        "full name": "Doe; Jane",
        id: 1,
      });
    });

    await t.step(
      "values that do not fit are 422 with every row; the table is unchanged",
      async () => {
        const before = await records(server, "csv_b");
        const bad = new TextEncoder().encode("id,price\n3,1.5\nfour,2\n5,x\n");
        const answer = errorOf(
          await server.request("POST", "table/csv_b/upload/csv?if_exists=append", {
            body: form(bad, "bad.csv"),
          }),
          422,
        );
        assert.deepEqual(
          cellsOf(answer),
          [[1, "id"], [2, "price"]],
        );
        assert.deepEqual(await records(server, "csv_b"), before);
      },
    );

    await t.step(
      "a bad time with a zone, even in a list, is 422 like any other bad value, not a null",
      async () => {
        const definition = {
          table: {
            columns: [
              { name: "id", type: "integer" },
              { name: "at", type: "timestamptz" },
              { name: "clock", type: "timetz" },
              { name: "times", type: "timestamptz[]" },
            ],
          },
        };
        const good = "id,at,clock,times\n" +
          "1,2026-01-01 10:00:00+02,10:00:00+02,[2026-01-01 10:00:00+02]\n2,,,\n";
        ok(
          await server.request("POST", "table/csv_tz/upload/csv", {
            body: form(new TextEncoder().encode(good), "tz.csv", definition),
          }),
        );
        const before = await records(server, "csv_tz");
        assert.deepEqual(before.map((r) => r.at), ["2026-01-01T08:00:00.000000Z", null]);
        assert.deepEqual(before[0]!.times, ["2026-01-01T08:00:00.000000Z"]);
        assert.equal(before[1]!.clock, null);
        // Each file alone, so that no other bad value fails the load for it.
        const files = [
          ["3,abc,10:00:00+02,", "at"],
          ["4,2026-01-01 10:00:00Z,noon,", "clock"],
          ["5,2026-01-01 10:00:00Z,10:00:00+00,[abc]", "times"],
        ];
        for (const [line, column] of files) {
          const answer = errorOf(
            await server.request("POST", "table/csv_tz/upload/csv?if_exists=append", {
              body: form(new TextEncoder().encode(`id,at,clock,times\n${line}\n`), "bad.csv"),
            }),
            422,
          );
          assert.deepEqual(
            cellsOf(answer),
            [[0, column]],
          );
        }
        assert.deepEqual(await records(server, "csv_tz"), before);
      },
    );

    await t.step("a STRUCT's text form names only its fields", async () => {
      const definition = {
        table: { columns: [{ name: "id", type: "integer" }, { name: "s", type: "struct(a int)" }] },
      };
      const csv = (line: string) => new TextEncoder().encode(`id,s\n${line}\n`);
      if (ENGINE === "postgres") {
        // PostgreSQL has no STRUCT: the definition is 422 naming it, and nothing is made.
        const refused = errorOf(
          await server.request("POST", "table/csv_struct/upload/csv", {
            body: form(csv(`1,"{'a': 1}"`), "s.csv", definition),
          }),
          422,
        );
        assert.match(
          refused.message,
          /Column "s": Type "STRUCT\("a" INT(EGER)?\)" does not exist on PostgreSQL .*: use jsonb/,
        );
        errorOf(await server.request("GET", "table/csv_struct"), 404);
        return;
      }
      ok(
        await server.request("POST", "table/csv_struct/upload/csv", {
          body: form(csv(`1,"{'a': 1}"`), "s.csv", definition),
        }),
      );
      const answer = errorOf(
        await server.request("POST", "table/csv_struct/upload/csv?if_exists=append", {
          body: form(csv(`2,"{'x': 1}"`), "s.csv"),
        }),
        422,
      );
      assert.deepEqual(
        cellsOf(answer),
        [[0, "s"]],
      );
      assert.deepEqual(await records(server, "csv_struct"), [{ id: 1, s: { a: 1 } }]);
    });

    await t.step(
      "lines with more or fewer values than the header are 422, not skipped",
      async () => {
        // DuckDB's sniffer made these fit by taking a later line as the header (losing the
        // lines above it) or by reading each line as one value.
        for (
          const text of ["a,b\n1,2,3\n", "a,b\n1,2\n4,5,6\n", "a,b,c\n1,2\n", "title\na,b\n1,2\n"]
        ) {
          const error = errorOf(
            await server.request("POST", "table/csv_ragged/upload/csv", {
              body: form(new TextEncoder().encode(text), "r.csv"),
            }),
            422,
          );
          assert.match(error.message, /do not all have as many values as its header \(line 1\)/);
        }
        errorOf(await server.request("GET", "table/csv_ragged"), 404);
        // Blank lines before the header are still passed over.
        const loaded = ok(
          await server.request("POST", "table/csv_ragged/upload/csv", {
            body: form(new TextEncoder().encode("\n\na;b\n1;2\n"), "r.csv"),
          }),
        );
        assert.equal(loaded.inserted, 1);
        ok(await server.request("DELETE", "table/csv_ragged"));
        // One column whose header holds a ";" the lines below do not: one column, as sniffed.
        const single = ok(
          await server.request("POST", "table/csv_ragged/upload/csv", {
            body: form(new TextEncoder().encode("note; remark\nhello\nworld\n"), "r.csv"),
          }),
        );
        assert.deepEqual([single.inserted, single.table.columns.length], [2, 1]);
        ok(await server.request("DELETE", "table/csv_ragged"));
      },
    );
    await t.step(
      "a delimiter ending every line makes no column; a value under it is 422",
      async () => {
        const upload = (name: string, text: string, search = "") =>
          server.request("POST", `table/${name}/upload/csv${search}`, {
            body: form(new TextEncoder().encode(text), "t.csv"),
          });
        const loaded = ok(await upload("csv_trailing", "a,b,\r\n1,2,\r\n3,4,\r\n"));
        assert.deepEqual(loaded.table.columns.map((c: { name: string }) => c.name), ["a", "b"]);
        ok(await upload("csv_trailing", "a;b;;\n5;6; ;\n", "?if_exists=append"));
        assert.deepEqual(await records(server, "csv_trailing"), [
          { a: 1, b: 2 },
          { a: 3, b: 4 },
          { a: 5, b: 6 },
        ]);
        const error = errorOf(await upload("csv_unnamed", "a,b,,\n1,2,,\n3,4,x,\n"), 422);
        assert.deepEqual(error.details, [
          { row: 1, column: "3", message: "A value under no header" },
        ]);
        errorOf(await server.request("GET", "table/csv_unnamed"), 404);
      },
    );
    await t.step("a malformed CSV or a spreadsheet sent to upload/csv is refused", async () => {
      // Valid UTF-8 where the format is told apart, broken after it.
      const rows = new TextEncoder().encode("a,b\n" + "1,2\n".repeat(20_000));
      const broken = new Uint8Array([...rows, 0x33, 0x2c, 0xff, 0xfe, 0x0a]);
      errorOf(
        await server.request("POST", "table/csv_c/upload/csv", { body: form(broken, "c.csv") }),
        400,
      );
      errorOf(
        await server.request("POST", "table/csv_c/upload/csv", {
          body: form(await fixture("workbook.xlsx"), "c.csv"),
        }),
        415,
      );
      errorOf(await server.request("GET", "table/csv_c"), 404);
    });
    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});
