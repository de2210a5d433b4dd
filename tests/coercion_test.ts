import assert from "node:assert/strict";
import * as XLSX from "xlsx";
import { ENGINE } from "./helpers/engine.ts";
import { cellsOf, errorOf, ok, TestServer, uploadForm } from "./helpers/server.ts";

const strict = {
  columns: [
    { name: "n", type: "integer" },
    { name: "b", type: "boolean" },
    { name: "at", type: "timestamp with time zone" },
    { name: "s", type: "varchar" },
    { name: "ts", type: "timestamp" },
  ],
};

/** The columns of {@link strict} that the CSV and spreadsheet paths carry. */
const SENT = ["n", "b", "at", "ts"];

/** An xlsx workbook of one sheet holding `rows` (the first one the header). */
function xlsx(rows: unknown[][]): Uint8Array {
  const book = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(rows), "Data");
  return new Uint8Array(XLSX.write(book, { bookType: "xlsx", type: "array" }));
}

/** `rows` of `strict` as CSV text, a header first. */
function csv(rows: Record<string, unknown>[]): Uint8Array {
  const lines = rows.map((r) => SENT.map((c) => String(r[c] ?? "")).join(","));
  return new TextEncoder().encode([SENT.join(","), ...lines].join("\n") + "\n");
}

/** Rows before the given ones in the large batch of {@link everyPath}. */
const FILLER = 6000;

/**
 * Every way rows reach a table, each with `rows` (of `strict`'s columns): POST records
 * small (the appender's candidates) and large (`read_json`, the given rows after
 * {@link FILLER} others), upload/json, upload/csv and upload/excel. The answers, by path;
 * `loaded`, when given, is called after each path has loaded, before the table goes.
 */
async function everyPath(
  server: TestServer,
  rows: Record<string, unknown>[],
  loaded: (path: string) => Promise<void> = async () => {},
) {
  const answers: Record<string, Awaited<ReturnType<TestServer["request"]>>> = {};
  await server.request("DELETE", "table/strict");
  ok(await server.request("POST", "table/strict", { body: { table: strict } }));
  answers["records"] = await server.request("POST", "table/strict/records", { body: rows });
  await loaded("records");
  // Over 1 MiB: past the appender and the in-memory group, loaded by read_json from the spool.
  const filler = Array.from({ length: FILLER }, (_, i) => ({ n: -i, s: "x".repeat(200) }));
  const large = JSON.stringify([...filler, ...rows]);
  assert.ok(large.length > 1024 * 1024);
  answers["records (large)"] = await server.request("POST", "table/strict/records", {
    body: large,
    headers: { "content-type": "application/json" },
  });
  await loaded("records (large)");
  ok(await server.request("DELETE", "table/strict"));
  answers["upload/json"] = await server.request("POST", "table/strict/upload/json", {
    body: { table: strict, data: rows },
  });
  await loaded("upload/json");
  await server.request("DELETE", "table/strict");
  answers["upload/csv"] = await server.request("POST", "table/strict/upload/csv", {
    body: uploadForm(csv(rows), "rows.csv", { table: strict }),
  });
  await loaded("upload/csv");
  await server.request("DELETE", "table/strict");
  const sheet = xlsx([SENT, ...rows.map((r) => SENT.map((c) => r[c]))]);
  answers["upload/excel"] = await server.request("POST", "table/strict/upload/excel", {
    body: uploadForm(sheet, "rows.xlsx", { table: strict }),
  });
  await loaded("upload/excel");
  return answers;
}

Deno.test("values that would be coerced are 422 with row and column on every insert path", async (t) => {
  const server = await TestServer.start();
  try {
    for (
      const [what, bad, column] of [
        ["2 into BOOLEAN", { n: 3, b: 2, at: null }, "b"],
        [
          "a UTC offset beyond ±15:59 into TIMESTAMPTZ",
          { n: 3, b: null, at: "2024-01-01T00:00:00+16:00" },
          "at",
        ],
        [
          "a UTC offset of -15:60 into TIMESTAMPTZ",
          { n: 3, b: null, at: "2024-01-01T00:00:00-15:60" },
          "at",
        ],
      ] as const
    ) {
      await t.step(what, async () => {
        const rows = [{ n: 1, b: true, at: "2024-01-01T00:00:00+15:59" }, bad];
        const answers = await everyPath(server, rows);
        for (const [path, answer] of Object.entries(answers)) {
          const error = errorOf(answer, 422);
          const row = path === "records (large)" ? FILLER + 1 : 1;
          assert.deepEqual(cellsOf(error), [[row, column]], `${path}: ${answer.text}`);
          assert.match(error.message, /is not a valid/, path);
        }
        await server.request("DELETE", "table/strict");
      });
    }

    await t.step("the same rows without the bad value load on every path", async () => {
      const rows = [
        { n: 1, b: true, at: "2024-01-01T00:00:00+15:59" },
        { n: 2, b: false, at: "2024-01-01T00:00:00-15:59" },
      ];
      const answers = await everyPath(server, rows);
      for (const answer of Object.values(answers)) ok(answer);
      const read = ok(await server.request("GET", "table/strict/records"));
      assert.deepEqual(read.records, [
        { n: 1, b: true, at: "2023-12-31T08:01:00.000000Z", s: null, ts: null },
        { n: 2, b: false, at: "2024-01-01T15:59:00.000000Z", s: null, ts: null },
      ]);
      ok(await server.request("DELETE", "table/strict"));
    });
    await t.step(
      "a TIMESTAMP keeps the clock time sent and ignores a UTC offset, on every path",
      async () => {
        const rows = [
          { n: 1, ts: "2024-01-01T10:00:00+05:00" },
          { n: 2, ts: "2024-01-01T10:00:00Z" },
          { n: 3, ts: "2024-01-01 10:00:00" },
        ];
        const paths: string[] = [];
        const answers = await everyPath(server, rows, async (path) => {
          const { records } = ok(await server.request("GET", "table/strict/records?limit=10000"));
          const sent = records.filter((r: { n: number }) => r.n > 0);
          assert.ok(sent.length > 0, path);
          for (const r of sent) assert.equal(r.ts, "2024-01-01T10:00:00.000000", path);
          paths.push(path);
        });
        for (const answer of Object.values(answers)) ok(answer);
        assert.equal(paths.length, 5);
        ok(await server.request("DELETE", "table/strict"));
      },
    );
    await t.step("inside a LIST, STRUCT or MAP too", async () => {
      const columns = [
        { name: "l", type: "boolean[]" },
        { name: "st", type: "struct(b boolean, t timestamptz)" },
        { name: "m", type: "map(varchar, boolean)" },
      ];
      if (ENGINE === "postgres") {
        // PostgreSQL has no STRUCT or MAP: 422 naming each, and the list alone.
        const refused = errorOf(
          await server.request("POST", "table/nested", { body: { table: { columns } } }),
          422,
        );
        const none = " does not exist on PostgreSQL (PostgreSQL has no nested type of this kind " +
          "without a type of its own): use jsonb";
        assert.deepEqual(refused.details, [
          {
            column: "st",
            message: `Column "st": Type "STRUCT("b" BOOLEAN, "t" TIMESTAMPTZ)"${none}`,
          },
          { column: "m", message: `Column "m": Type "MAP(VARCHAR, BOOLEAN)"${none}` },
        ]);
        ok(
          await server.request("POST", "table/nested", {
            body: { table: { columns: columns.slice(0, 1) } },
          }),
        );
        const answer = await server.request("POST", "table/nested/records", {
          body: [{ l: [true, null] }, { l: [true, 2] }],
        });
        assert.deepEqual(cellsOf(errorOf(answer, 422)), [[1, "l"]]);
        ok(await server.request("POST", "table/nested/records", { body: [{ l: [true, null] }] }));
        assert.deepEqual(ok(await server.request("GET", "table/nested/records")).records, [
          { l: [true, null] },
        ]);
        return;
      }
      ok(await server.request("POST", "table/nested", { body: { table: { columns } } }));
      const good = {
        l: [true, null],
        st: { b: false, t: "2024-01-01T00:00:00-15:59" },
        m: { a: true },
      };
      const answer = await server.request("POST", "table/nested/records", {
        body: [
          good,
          { l: [true, 2] },
          { st: { b: 2 } },
          { st: { t: "2024-01-01T00:00:00+16:00" } },
          {
            m: { a: 2 },
          },
        ],
      });
      assert.deepEqual(cellsOf(errorOf(answer, 422)), [[1, "l"], [2, "st"], [3, "st"], [4, "m"]]);
      ok(await server.request("POST", "table/nested/records", { body: [good] }));
      assert.deepEqual(ok(await server.request("GET", "table/nested/records")).records, [
        { ...good, st: { b: false, t: "2024-01-01T15:59:00.000000Z" } },
      ]);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("dates and timestamps before year 1 read back in ISO 8601, in JSON and CSV", async () => {
  const server = await TestServer.start();
  try {
    const columns = [
      { name: "k", type: "integer" },
      { name: "d", type: "date" },
      { name: "ts", type: "timestamp" },
      { name: "tz", type: "timestamptz" },
    ];
    ok(await server.request("POST", "table/old", { body: { table: { columns } } }));
    // ISO 8601 counts 1 BC as year 0000 and 2 BC as -0001.
    const rows = [
      {
        k: 1,
        d: "-0001-01-01",
        ts: "-0001-06-01T10:00:00.000000",
        tz: "-0044-03-15T12:00:00.000000Z",
      },
      {
        k: 2,
        d: "0000-12-31",
        ts: "0000-01-01T00:00:00.000000",
        tz: "0000-02-29T23:59:59.500000Z",
      },
      {
        k: 3,
        d: "0001-01-01",
        ts: "0999-12-31T23:59:59.000000",
        tz: "2024-01-01T00:00:00.000000Z",
      },
    ];
    ok(await server.request("POST", "table/old/records", { body: rows }));
    const read = ok(await server.request("GET", "table/old/records")).records;
    assert.deepEqual(read, rows);
    // What was read goes back in unchanged.
    ok(await server.request("POST", "table/old/records", { body: read }));
    const csv = await server.request("GET", "table/old/records/csv");
    assert.equal(
      csv.text.split("\n").slice(0, 4).join("\n"),
      [
        "k,d,ts,tz",
        "1,-0001-01-01,-0001-06-01T10:00:00.000000,-0044-03-15T12:00:00.000000Z",
        "2,0000-12-31,0000-01-01T00:00:00.000000,0000-02-29T23:59:59.500000Z",
        "3,0001-01-01,0999-12-31T23:59:59.000000,2024-01-01T00:00:00.000000Z",
      ].join("\n"),
    );
    // The export loads back as it reads.
    await server.request("DELETE", "table/old");
    ok(
      await server.request("POST", "table/old/upload/csv", {
        body: uploadForm(new TextEncoder().encode(csv.text), "old.csv", { table: { columns } }),
      }),
    );
    assert.deepEqual(ok(await server.request("GET", "table/old/records")).records, [
      ...rows,
      ...rows,
    ]);
    // Inside lists and structs too.
    const list = { name: "ds", type: "date[]" };
    const struct = { name: "st", type: "struct(at timestamp)" };
    const listed = { ds: ["-0001-01-01", "2024-01-01"] };
    let nested = [list, struct];
    let values: Record<string, unknown>[] = [{
      ...listed,
      st: { at: "0000-06-01T00:00:00.000000" },
    }];
    if (ENGINE === "postgres") {
      // PostgreSQL has no STRUCT: 422 naming it, and the list alone.
      const refused = await server.request("POST", "table/nested", {
        body: { table: { columns: nested } },
      });
      assert.equal(
        errorOf(refused, 422).message,
        'The definition of table "nested" is invalid: Column "st": Type "STRUCT("at" TIMESTAMP)" ' +
          "does not exist on PostgreSQL (PostgreSQL has no nested type of this kind without a " +
          "type of its own): use jsonb",
      );
      nested = [list];
      values = [listed];
    }
    ok(await server.request("POST", "table/nested", { body: { table: { columns: nested } } }));
    ok(await server.request("POST", "table/nested/records", { body: values }));
    assert.deepEqual(ok(await server.request("GET", "table/nested/records")).records, values);
  } finally {
    await server.dispose();
  }
});

Deno.test("a BOOLEAN default true reads back as true", async () => {
  const server = await TestServer.start();
  try {
    const columns = [
      { name: "yes", type: "boolean", default: "true" },
      { name: "no", type: "boolean", default: "FALSE" },
      { name: "label", type: "varchar", default: "'CAST(''t'' AS BOOLEAN)'" },
    ];
    const created = ok(
      await server.request("POST", "table/flags", { body: { table: { columns } } }),
    );
    const defaults = ["true", "false", "'CAST(''t'' AS BOOLEAN)'"];
    assert.deepEqual(created.table.columns.map((c: { default: string }) => c.default), defaults);
    const described = ok(await server.request("GET", "table/flags"));
    assert.deepEqual(described.table.columns.map((c: { default: string }) => c.default), defaults);
    ok(await server.request("POST", "table/flags/records", { body: [{}] }));
    assert.deepEqual(ok(await server.request("GET", "table/flags/records")).records, [
      { yes: true, no: false, label: "CAST('t' AS BOOLEAN)" },
    ]);
  } finally {
    await server.dispose();
  }
});

Deno.test("serial columns number the rows of a batch in the order they were sent", async (t) => {
  const server = await TestServer.start();
  /** Asserts that the table's rows, by `n`, are `{id: n + 1, n}` for `n` from 0 to `size - 1`. */
  async function assertNumbered(name: string, size: number) {
    const csv = (await server.request("GET", `table/${name}/records/csv`)).text;
    const read = csv.trim().split("\n").slice(1).map((line) => line.split(",").map(Number))
      .sort((a, b) => a[1]! - b[1]!);
    assert.equal(read.length, size);
    const wrong = read.filter(([id, n], i) => id !== i + 1 || n !== i);
    assert.deepEqual(wrong.slice(0, 3), [], `${wrong.length} of ${size} rows out of order`);
  }
  const serial = { name: "id", type: "bigserial" };
  try {
    await t.step("POST records, small and large batches", async () => {
      const table = {
        columns: [serial, { name: "n", type: "integer" }],
        constraints: { primary_key: { columns: ["id"] } },
      };
      for (const size of [250, 5000, 50_000]) {
        ok(await server.request("POST", `table/s${size}`, { body: { table } }));
        const rows = Array.from({ length: size }, (_, n) => ({ n }));
        ok(await server.request("POST", `table/s${size}/records`, { body: rows }));
        await assertNumbered(`s${size}`, size);
      }
    });

    await t.step(
      "on_conflict=skip on another key, and CSV uploads",
      async () => {
        const table = {
          columns: [serial, { name: "n", type: "integer" }],
          constraints: { unique: [{ columns: ["n"] }] },
        };
        ok(await server.request("POST", "table/skip", { body: { table } }));
        const rows = Array.from({ length: 5000 }, (_, n) => ({ n }));
        ok(await server.request("POST", "table/skip/records?on_conflict=skip", { body: rows }));
        await assertNumbered("skip", 5000);
        const csv = ["n", ...rows.map((r) => r.n)].join("\n") + "\n";
        ok(
          await server.request("POST", "table/csv/upload/csv", {
            body: uploadForm(new TextEncoder().encode(csv), "n.csv", { table }),
          }),
        );
        await assertNumbered("csv", 5000);
      },
    );

    await t.step("on_conflict=update keeps a key's last row, numbered in order", async () => {
      const table = {
        columns: [serial, { name: "n", type: "integer" }],
        constraints: { unique: [{ columns: ["n"] }] },
      };
      ok(await server.request("POST", "table/update", { body: { table } }));
      const rows = Array.from({ length: 5000 }, (_, n) => [{ n }, { n }]).flat();
      const answer = ok(
        await server.request("POST", "table/update/records?on_conflict=update", { body: rows }),
      );
      assert.deepEqual([answer.inserted, answer.updated], [5000, 5000]);
      await assertNumbered("update", 5000);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("spreadsheets: dates around 1900 keep their day, and dates mixed with date-times are timestamps", async () => {
  const server = await TestServer.start();
  try {
    const date = (iso: string, z: string) => ({ t: "d", v: new Date(`${iso}Z`), z });
    const DAY = String.raw`yyyy\-mm\-dd`;
    const rows = [
      ["day", "mixed"],
      [date("1899-12-31T00:00:00", DAY), date("2024-01-01T00:00:00", DAY)],
      [
        date("1900-01-01T00:00:00", DAY),
        date("2024-01-01T12:00:00", String.raw`yyyy\-mm\-dd\ hh:mm`),
      ],
      [date("1900-03-01T00:00:00", DAY), null],
    ];
    // SheetJS writes ODS dates as dates (office:date-value) and xlsx ones as serials, 1899-12-31
    // as 0, Excel's "1900-01-00".
    for (const bookType of ["ods", "xlsx"] as const) {
      const book = XLSX.utils.book_new();
      XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(rows, { cellDates: true }), "S");
      const file = new Uint8Array(XLSX.write(book, { bookType, type: "array", cellDates: true }));
      const answer = ok(
        await server.request("POST", `table/${bookType}/upload/excel`, {
          body: uploadForm(file, `dates.${bookType}`),
        }),
      );
      assert.deepEqual(
        answer.table.columns.map((c: { type: string }) => c.type),
        // Responses carry PostgreSQL's canonical names.
        ENGINE === "postgres" ? ["date", "timestamp without time zone"] : ["DATE", "TIMESTAMP"],
        bookType,
      );
      assert.deepEqual(ok(await server.request("GET", `table/${bookType}/records`)).records, [
        { day: "1899-12-31", mixed: "2024-01-01T00:00:00.000000" },
        { day: "1900-01-01", mixed: "2024-01-01T12:00:00.000000" },
        { day: "1900-03-01", mixed: null },
      ], bookType);
    }
  } finally {
    await server.dispose();
  }
});

Deno.test("spreadsheets: a time a date format hides is kept, milliseconds keep a TIMESTAMP, times alone are TIME", async () => {
  const server = await TestServer.start();
  try {
    const date = (iso: string, z: string) => ({ t: "d", v: new Date(`${iso}Z`), z });
    const DAY = String.raw`yyyy\-mm\-dd`;
    const TIME = String.raw`yyyy\-mm\-dd\ hh:mm:ss`;
    // A time of day alone: a fraction of a day in a format without a date.
    const clock = (v: number) => ({ t: "n", v, z: "h:mm:ss" });
    const rows = [
      ["hidden", "ms", "clock"],
      [date("2024-01-02T10:30:00", DAY), date("2024-01-02T10:30:00.250", TIME), clock(0.5)],
      [
        date("2024-01-05T23:15:00", "dd/mm/yyyy"),
        date("2024-01-03T11:00:00", TIME),
        clock(0.25 + 0.4 / 86_400),
      ],
    ];
    for (const bookType of ["xlsx", "ods"] as const) {
      const book = XLSX.utils.book_new();
      XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(rows, { cellDates: true }), "S");
      const file = new Uint8Array(XLSX.write(book, { bookType, type: "array", cellDates: true }));
      const answer = ok(
        await server.request("POST", `table/t_${bookType}/upload/excel`, {
          body: uploadForm(file, `times.${bookType}`),
        }),
      );
      const [timestamp, time] = ENGINE === "postgres"
        ? ["timestamp without time zone", "time without time zone"]
        : ["TIMESTAMP", "TIME"];
      assert.deepEqual(
        answer.table.columns.map((c: { type: string }) => c.type),
        [timestamp, timestamp, time],
        bookType,
      );
      assert.deepEqual(ok(await server.request("GET", `table/t_${bookType}/records`)).records, [
        {
          hidden: "2024-01-02T10:30:00.000000",
          ms: "2024-01-02T10:30:00.250000",
          clock: "12:00:00",
        },
        {
          hidden: "2024-01-05T23:15:00.000000",
          ms: "2024-01-03T11:00:00.000000",
          clock: "06:00:00.4",
        },
      ], bookType);
    }
  } finally {
    await server.dispose();
  }
});

Deno.test("a PUT that retypes a column converts by the loading rule: what it would coerce is 422 and changes nothing", async (t) => {
  const server = await TestServer.start();
  /**
   * A table `name` of columns `i` and `c` of `type` holding `values`, then `c` retyped to
   * `to`; `reordered` puts `c` first, which takes the rebuild rather than ALTER TABLE.
   */
  const retype = async (
    name: string,
    type: string,
    values: unknown[],
    to: string,
    reordered = false,
  ) => {
    const columns = [{ name: "i", type: "integer" }, { name: "c", type }];
    await server.request("DELETE", `table/${name}`);
    ok(await server.request("POST", `table/${name}`, { body: { table: { columns } } }));
    ok(
      await server.request("POST", `table/${name}/records`, {
        body: values.map((c, i) => ({ i, c })),
      }),
    );
    const before = ok(await server.request("GET", `table/${name}`)).table;
    const wanted = before.columns.map((c: { name: string }) =>
      c.name === "c" ? { ...c, type: to } : c
    );
    const answer = await server.request("PUT", `table/${name}`, {
      body: { table: { columns: reordered ? wanted.reverse() : wanted } },
    });
    return { answer, before };
  };
  try {
    for (
      const [what, type, values, to] of [
        ["integer 2 to BOOLEAN", "integer", [0, 1, 2], "boolean"],
        ["decimal 0.5 to BOOLEAN", "decimal(4,2)", [1, 0.5], "boolean"],
        ["text 2 to BOOLEAN", "varchar", ["t", "2"], "boolean"],
        [
          "text with a UTC offset beyond ±15:59 to TIMESTAMPTZ",
          "varchar",
          ["2024-01-01 10:00:00+15:59", "2024-01-01 10:00:00+16:00"],
          "timestamp with time zone",
        ],
        ["a list of integers holding 2 to BOOLEAN[]", "integer[]", [[0, 1], [2]], "boolean[]"],
        [
          "an array of integers holding 2 to BOOLEAN[2]",
          "integer[2]",
          [[0, 1], [1, 2]],
          "boolean[2]",
        ],
        ["JSON 2 to BOOLEAN", "json", [true, 2], "boolean"],
        [
          "JSON text with a UTC offset beyond ±15:59 to TIMESTAMPTZ",
          "json",
          ["2024-01-01 10:00:00+15:59", "2024-01-01 10:00:00+16:00"],
          "timestamp with time zone",
        ],
      ] as const
    ) {
      await t.step(what, async () => {
        if (ENGINE === "postgres" && type === "integer[2]") {
          // PostgreSQL has no fixed-size arrays: the column is refused, naming its type.
          const error = errorOf(
            await server.request("POST", "table/r", {
              body: { table: { columns: [{ name: "c", type }] } },
            }),
            422,
          );
          assert.match(error.message, /Column "c": Type "INTEGER\[2\]"/);
          return;
        }
        const { answer, before } = await retype("r", type, [...values], to);
        const error = errorOf(answer, 422);
        assert.deepEqual(cellsOf(error), [[values.length - 1, "c"]], answer.text);
        assert.match(error.message, /column "c" in row/);
        assert.deepEqual(ok(await server.request("GET", "table/r")).table, before);
        ok(await server.request("DELETE", "table/r"));
      });
    }
    for (const reordered of [false, true]) {
      const how = reordered ? "rebuilt" : "altered";
      await t.step(`values the rule takes convert as loading converts them (${how})`, async () => {
        const cells = async () =>
          ok(await server.request("GET", "table/r/records")).records.map((r: { c: unknown }) =>
            r.c
          );
        for (
          const [type, values, to, read] of [
            ["varchar", ["t", "0", "yes"], "boolean", [true, false, true]],
            ["integer", [1, 0], "boolean", [true, false]],
            ["integer[]", [[1, 0]], "boolean[]", [[true, false]]],
            ["json", [true, "f", 1], "boolean", [true, false, true]],
            [
              "varchar",
              ["2024-01-01 10:00:00+15:59"],
              "timestamp with time zone",
              ["2023-12-31T18:01:00.000000Z"],
            ],
            // The clock time, as loading keeps it (docs/decisions.md, Rows).
            ["varchar", ["2024-01-01 10:00:00+05:00"], "timestamp", ["2024-01-01T10:00:00.000000"]],
          ] as const
        ) {
          const { answer } = await retype("r", type, [...values], to, reordered);
          ok(answer);
          assert.deepEqual(await cells(), read);
        }
        ok(await server.request("DELETE", "table/r"));
      });
    }
  } finally {
    await server.dispose();
  }
});
