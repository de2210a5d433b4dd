import assert from "node:assert/strict";
import {
  type Answer,
  assertSpoolEmpty,
  cellsOf,
  errorOf,
  ok,
  TestServer,
  uploadForm,
} from "./helpers/server.ts";
import { samples, value } from "./helpers/metrics.ts";
import { ENGINE, onDuckDB } from "./helpers/engine.ts";
import { LOADED_PEOPLE_TABLE } from "./fixtures/tables.ts";

const people = LOADED_PEOPLE_TABLE;

async function records(server: TestServer, table: string, query = "") {
  const limit = query.includes("limit=") ? "" : "&limit=10000";
  return ok(await server.request("GET", `table/${table}/records?schema=public${limit}${query}`));
}

Deno.test("records: insert, read back, page, and each on_conflict mode", async (t) => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/people", { body: { table: people } }));

    await t.step("POST records inserts a batch and answers the table with the count", async () => {
      const answer = ok(
        await server.request("POST", "table/people/records", {
          body: [
            { id: 2, name: "Grace", age: 85 },
            { id: 1, name: "Ada", age: 36, city: "London" },
            { id: 3, name: "Linus" },
          ],
        }),
      );
      assert.equal(answer.inserted, 3);
      assert.equal(answer.table.name, "people");
      assert.equal(answer.skipped, undefined);
      const { records: rows, total } = await records(server, "people");
      assert.equal(total, 3);
      // A key that some row of the batch has is null where a row lacks it (as in PostgREST);
      // a column no row names takes its default.
      assert.deepEqual(rows, [
        { id: 1, name: "Ada", age: 36, city: "London" },
        { id: 2, name: "Grace", age: 85, city: null },
        { id: 3, name: "Linus", age: null, city: null },
      ]);
      ok(
        await server.request("POST", "table/people/records", { body: [{ id: 7, name: "Edsger" }] }),
      );
      assert.equal((await records(server, "people", "&offset=3")).records[0].city, "Lima");
      ok(await server.request("DELETE", "table/people"));
      ok(await server.request("POST", "table/people", { body: { table: people } }));
      ok(
        await server.request("POST", "table/people/records", {
          body: [
            { id: 2, name: "Grace", age: 85 },
            { id: 1, name: "Ada", age: 36, city: "London" },
            { id: 3, name: "Linus" },
          ],
        }),
      );
    });

    await t.step(
      "GET records of a table without a primary key pages in insertion order",
      async () => {
        const log = { columns: [{ name: "n", type: "int" }, { name: "s", type: "varchar" }] };
        ok(await server.request("POST", "table/log", { body: { table: log } }));
        for (const body of [[{ n: 3 }, { n: 2, s: "two" }, { n: 1 }], [{ n: 0 }]]) {
          ok(await server.request("POST", "table/log/records", { body }));
        }
        assert.deepEqual(await records(server, "log", "&offset=1&limit=2"), {
          records: [{ n: 2, s: "two" }, { n: 1, s: null }],
          total: 4,
        });
        assert.deepEqual((await records(server, "log", "&offset=3")).records, [{ n: 0, s: null }]);
        ok(await server.request("DELETE", "table/log"));
      },
    );

    await t.step("GET records pages with offset and limit in primary key order", async () => {
      const page = await records(server, "people", "&offset=1&limit=1");
      assert.deepEqual(page, {
        records: [{ id: 2, name: "Grace", age: 85, city: null }],
        total: 3,
      });
      assert.deepEqual((await records(server, "people", "&offset=10")).records, []);
      errorOf(await server.request("GET", "table/people/records?limit=10001"), 400);
      errorOf(await server.request("GET", "table/people/records?offset=-1"), 400);
      errorOf(await server.request("GET", "table/nobody/records"), 404);
    });

    await t.step("on_conflict=fail rejects the whole batch with 409 naming the rows", async () => {
      const answer = await server.request("POST", "table/people/records", {
        body: [{ id: 4, name: "New" }, { id: 1, name: "Again" }, { id: 5, name: "Twice" }, {
          id: 5,
          name: "Twice",
        }],
      });
      const error = errorOf(answer, 409);
      assert.deepEqual(error.details?.map((d) => (d as { row: number }).row), [1, 3]);
      assert.equal((await records(server, "people")).total, 3);
    });

    await t.step("on_conflict=skip skips key conflicts, also within the batch", async () => {
      const answer = ok(
        await server.request("POST", "table/people/records?on_conflict=skip", {
          body: [{ id: 1, name: "Skipped" }, { id: 4, name: "Dennis" }, { id: 4, name: "Dup" }],
        }),
      );
      assert.equal(answer.inserted, 1);
      assert.equal(answer.skipped, 2);
      const rows = (await records(server, "people")).records;
      assert.equal(rows.find((r: { id: number }) => r.id === 1).name, "Ada");
      assert.equal(rows.find((r: { id: number }) => r.id === 4).name, "Dennis");
    });

    await t.step("on_conflict=skip still rejects a NOT NULL or cast error", async () => {
      errorOf(
        await server.request("POST", "table/people/records?on_conflict=skip", {
          body: [{ id: 9, name: null }],
        }),
        422,
      );
      errorOf(
        await server.request("POST", "table/people/records?on_conflict=skip", {
          body: [{ id: "x", name: "y" }],
        }),
        422,
      );
      assert.equal((await records(server, "people")).total, 4);
    });

    await t.step(
      "on_conflict=update upserts on the primary key, the last row of a key winning",
      async () => {
        const answer = ok(
          await server.request("POST", "table/people/records?on_conflict=UPDATE", {
            body: [{ id: 1, name: "Ada L." }, { id: 6, name: "Ken" }, { id: 6, name: "Ken T." }],
          }),
        );
        assert.equal(answer.inserted, 1);
        assert.equal(answer.updated, 2);
        const rows = (await records(server, "people")).records;
        assert.deepEqual(rows.find((r: { id: number }) => r.id === 1), {
          id: 1,
          name: "Ada L.",
          age: 36,
          city: "London",
        });
        assert.equal(rows.find((r: { id: number }) => r.id === 6).name, "Ken T.");
      },
    );

    await t.step(
      "skip and update need a primary key or exactly one unique constraint",
      async () => {
        ok(
          await server.request("POST", "table/loose", {
            body: { table: { columns: [{ name: "a", type: "int" }] } },
          }),
        );
        errorOf(
          await server.request("POST", "table/loose/records?on_conflict=skip", {
            body: [{ a: 1 }],
          }),
          422,
        );
        errorOf(
          await server.request("POST", "table/loose/records?on_conflict=update", {
            body: [{ a: 1 }],
          }),
          422,
        );
        ok(await server.request("POST", "table/loose/records", { body: [{ a: 1 }, { a: 1 }] }));
        ok(
          await server.request("POST", "table/uniq", {
            body: {
              table: {
                columns: [{ name: "k", type: "text" }, { name: "v", type: "int" }],
                constraints: { unique: [{ columns: ["k"] }] },
              },
            },
          }),
        );
        ok(await server.request("POST", "table/uniq/records", { body: [{ k: "a", v: 1 }] }));
        const upserted = ok(
          await server.request("POST", "table/uniq/records?on_conflict=update", {
            body: [{ k: "a", v: 2 }],
          }),
        );
        assert.deepEqual([upserted.inserted, upserted.updated], [0, 1]);
        assert.deepEqual((await records(server, "uniq")).records, [{ k: "a", v: 2 }]);
      },
    );

    await t.step("an unknown on_conflict value is 400", async () => {
      errorOf(
        await server.request("POST", "table/people/records?on_conflict=random", { body: [] }),
        400,
      );
    });

    await t.step(
      "every value error is listed with its row and column, and nothing is inserted",
      async () => {
        const answer = await server.request("POST", "table/people/records", {
          body: [
            { id: 10, name: "ok" },
            { id: "eleven", name: "bad id" },
            { id: 12, name: null },
            { id: 13, name: "bad age", age: 100000 },
            { id: 14, name: "fine" },
            { id: 15 },
          ],
        });
        const error = errorOf(answer, 422);
        assert.deepEqual(
          cellsOf(error),
          [[1, "id"], [2, "name"], [3, "age"], [5, "name"]],
        );
        const unknown = errorOf(
          await server.request("POST", "table/people/records", {
            body: [{ id: 20, name: "a" }, { id: 21, name: "b", colour: "red" }],
          }),
          422,
        );
        assert.deepEqual(unknown.details, [{
          row: 1,
          column: "colour",
          message: 'Unknown column "colour"',
        }]);
        errorOf(await server.request("POST", "table/people/records", { body: [{ id: 30 }] }), 422);
        assert.equal((await records(server, "people")).total, 5);
      },
    );

    await t.step("a batch whose last row is bad leaves zero rows", async () => {
      const batch = Array.from({ length: 5000 }, (_, i) => ({ id: 1000 + i, name: `n${i}` }));
      batch[4999] = { id: 5999, name: null as unknown as string };
      const error = errorOf(
        await server.request("POST", "table/people/records", { body: batch }),
        422,
      );
      assert.deepEqual(error.details, [{
        row: 4999,
        column: "name",
        message: "Column is NOT NULL but the value is null or missing",
      }]);
      assert.equal((await records(server, "people")).total, 5);
    });

    await t.step("a null in a NOT NULL text column alone is 422, not 500", async () => {
      // Text needs no cast check, so the NOT NULL check is the only (and first) one.
      ok(
        await server.request("POST", "table/notes", {
          body: { table: { columns: [{ name: "body", type: "varchar", is_nullable: false }] } },
        }),
      );
      const error = errorOf(
        await server.request("POST", "table/notes/records", { body: [{ body: "a" }, {}] }),
        422,
      );
      assert.deepEqual(error.details, [{
        row: 1,
        column: "body",
        message: "Column is NOT NULL but the value is null or missing",
      }]);
      assert.equal((await records(server, "notes")).total, 0);
    });

    await t.step("bodies that are not arrays of objects are 400 and change nothing", async () => {
      for (
        const body of [
          '{"id": 1}',
          "[1, 2]",
          '[{"id": 1}, [2]]',
          '[{"id": 50, "name": "x"}, {"id": ',
          "",
          "[{}] x",
        ]
      ) {
        errorOf(
          await server.request("POST", "table/people/records", {
            body,
            headers: { "content-type": "application/json" },
          }),
          400,
        );
      }
      errorOf(
        await server.request("POST", "table/people/records", {
          body: "[]",
          headers: { "content-type": "text/csv" },
        }),
        415,
      );
      assert.equal((await records(server, "people")).total, 5);
    });

    await t.step("an empty batch inserts nothing", async () => {
      assert.equal(
        ok(await server.request("POST", "table/people/records", { body: [] })).inserted,
        0,
      );
    });

    await t.step("rows with keys first seen past the sampled rows are still checked", async () => {
      const batch = Array.from({ length: 2500 }, (_, i) => ({ id: 100_000 + i, name: `s${i}` }));
      (batch[2000] as Record<string, unknown>).colour = "red";
      const error = errorOf(
        await server.request("POST", "table/people/records", { body: batch }),
        422,
      );
      assert.deepEqual(error.details, [{
        row: 2000,
        column: "colour",
        message: 'Unknown column "colour"',
      }]);
      (batch[2000] as Record<string, unknown>).colour = undefined;
      (batch[2400] as Record<string, unknown>).age = 44;
      assert.equal(
        ok(await server.request("POST", "table/people/records", { body: batch })).inserted,
        2500,
      );
      const ages = (await records(server, "people", "&offset=5&limit=2500")).records.map((
        r: { age: number | null },
      ) => r.age);
      assert.equal(ages.filter((a: number | null) => a === 44).length, 1);
      assert.equal(ages.filter((a: number | null) => a === null).length, 2499);
    });

    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: every JSON value kind round-trips through insert and read", async () => {
  const server = await TestServer.start();
  try {
    const columns = [
      ["i", "integer"],
      ["big", "bigint"],
      ["huge", "hugeint"],
      ["dec", "decimal(20,4)"],
      ["dbl", "double"],
      ["flt", "real"],
      ["b", "boolean"],
      ["s", "varchar"],
      ["d", "date"],
      ["tm", "time"],
      ["ts", "timestamp"],
      ["tz", "timestamp with time zone"],
      ["u", "uuid"],
      ["j", "json"],
      ["l", "integer[]"],
      ["st", "struct(a integer, b varchar)"],
      ["bl", "blob"],
    ];
    const definition = (kept: string[][]) => ({
      table: {
        columns: [
          { name: "k", type: "integer" },
          ...kept.map(([name, type]) => ({ name, type })),
        ],
      },
    });
    /** Each row without the columns PostgreSQL lacks the types of. */
    let without = <T extends object>(row: T): T => row;
    if (ENGINE === "postgres") {
      // PostgreSQL has no HUGEINT or STRUCT: 422 naming each; every other kind round-trips.
      const refused = errorOf(
        await server.request("POST", "table/kinds", { body: definition(columns) }),
        422,
      );
      assert.deepEqual(refused.details, [
        {
          column: "huge",
          message: 'Column "huge": Type "HUGEINT" does not exist on PostgreSQL ' +
            "(PostgreSQL has no 128-bit integer): use numeric(39,0)",
        },
        {
          column: "st",
          message: 'Column "st": Type "STRUCT("a" INTEGER, "b" VARCHAR)" does not exist on ' +
            "PostgreSQL (PostgreSQL has no nested type of this kind without a type of its own): " +
            "use jsonb",
        },
      ]);
      without = <T extends object>(row: T): T =>
        Object.fromEntries(Object.entries(row).filter(([k]) => k !== "huge" && k !== "st")) as T;
    }
    const kept = columns.filter(([name]) => without({ [name!]: 1 })[name!] !== undefined);
    ok(await server.request("POST", "table/kinds", { body: definition(kept) }));
    const input = [
      {
        k: 1,
        i: -2147483648,
        big: "9007199254740993",
        huge: "-170141183460469231731687303715884105727",
        dec: "1234567890123456.7891",
        dbl: 1.5e-300,
        flt: 0.1,
        b: true,
        s: 'Grüße, "quoted", 😀\nnew line',
        d: "2026-11-22",
        tm: "10:11:12.5",
        ts: "2026-11-22T10:00:00.123456",
        tz: "2026-11-22T12:00:00+02:00",
        u: "4e1c8f5a-59a0-4d1a-8a3e-6f7c2b1d9e01",
        j: { nested: [1, { deep: null }], text: "x" },
        l: [1, 2, 3],
        st: { a: 7, b: "seven" },
        bl: "aGVsbG8gd29ybGQ=",
      },
      { k: 2, big: 42, dec: 0.5, b: false, l: [], j: [1, "two"] },
      { k: 3 },
    ].map(without);
    ok(await server.request("POST", "table/kinds/records", { body: input }));
    const { records: rows } = await records(server, "kinds");
    assert.deepEqual(
      rows[0],
      without({
        k: 1,
        i: -2147483648,
        big: "9007199254740993",
        huge: "-170141183460469231731687303715884105727",
        dec: 1234567890123456.8,
        dbl: 1.5e-300,
        flt: 0.1,
        b: true,
        s: 'Grüße, "quoted", 😀\nnew line',
        d: "2026-11-22",
        tm: "10:11:12.5",
        ts: "2026-11-22T10:00:00.123456",
        tz: "2026-11-22T10:00:00.000000Z",
        u: "4e1c8f5a-59a0-4d1a-8a3e-6f7c2b1d9e01",
        j: { nested: [1, { deep: null }], text: "x" },
        l: [1, 2, 3],
        st: { a: 7, b: "seven" },
        bl: "aGVsbG8gd29ybGQ=",
      }),
    );
    // The decimal travels as an exact JSON number: check the text, not a float.
    const raw = (await server.request("GET", "table/kinds/records")).text;
    assert.match(raw, /"dec":1234567890123456\.7891/);
    assert.deepEqual(
      rows[1],
      without({
        k: 2,
        i: null,
        big: 42,
        huge: null,
        dec: 0.5,
        dbl: null,
        flt: null,
        b: false,
        s: null,
        d: null,
        tm: null,
        ts: null,
        tz: null,
        u: null,
        j: [1, "two"],
        l: [],
        st: null,
        bl: null,
      }),
    );
    assert.ok(Object.values(rows[2]).slice(1).every((v) => v === null));
    const bad = errorOf(
      await server.request("POST", "table/kinds/records", { body: [{ k: 4, bl: "not base64!" }] }),
      422,
    );
    assert.equal((bad.details?.[0] as { column: string }).column, "bl");
  } finally {
    await server.dispose();
  }
});

Deno.test("records: values inside lists, structs and maps travel as they do at the top", async () => {
  const server = await TestServer.start();
  try {
    const columns = [
      ["k", "integer"],
      ["bigs", "bigint[]"],
      ["pair", "hugeint[2]"],
      [
        "st",
        'struct(tz timestamptz, ts timestamp, f real, d decimal(38,10), b blob, "odd ""name""" ubigint)',
      ],
      ["deep", "struct(inner struct(x bigint)[])[]"],
      ["m", "map(varchar, blob)"],
      ["bm", "map(bigint, double)"],
      // Nothing inside needs converting: rendered by DuckDB's to_json in one call.
      ["plain", "struct(a integer, b varchar[], c map(varchar, boolean))"],
      ["ints", "integer[][]"],
      ["lists", "map(varchar, bigint[])"],
    ];
    if (ENGINE === "postgres") {
      // PostgreSQL has none of these types but bigint[]: 422 naming each; the list travels.
      const refused = errorOf(
        await server.request("POST", "table/nested", {
          body: { table: { columns: columns.map(([name, type]) => ({ name, type })) } },
        }),
        422,
      );
      const details = refused.details as { column: string; message: string }[];
      assert.deepEqual(details.map((d) => d.column), columns.slice(2).map(([name]) => name));
      for (const d of details) {
        assert.match(
          d.message,
          /^Column "[a-z]+": Type ".+" (does not exist on PostgreSQL|is not a type PostgreSQL keeps)/,
        );
      }
      assert.match(details[0]!.message, /Type "HUGEINT\[2\]" does not exist on PostgreSQL/);
      assert.match(details[1]!.message, /Type "STRUCT\("tz" TIMESTAMPTZ, /);
      assert.match(details[3]!.message, /Type "MAP\(VARCHAR, BLOB\)"/);
      const kept = columns.slice(0, 2).map(([name, type]) => ({ name, type }));
      ok(await server.request("POST", "table/nested", { body: { table: { columns: kept } } }));
      const bigs = ["9007199254740993", 5, null, "-9223372036854775808"];
      ok(await server.request("POST", "table/nested/records", { body: [{ k: 1, bigs }] }));
      assert.deepEqual((await records(server, "nested")).records, [{ k: 1, bigs }]);
      return;
    }
    ok(
      await server.request("POST", "table/nested", {
        body: { table: { columns: columns.map(([name, type]) => ({ name, type })) } },
      }),
    );
    const first = {
      k: 1,
      bigs: ["9007199254740993", 5, null, "-9223372036854775808"],
      pair: ["170141183460469231731687303715884105727", 1],
      st: {
        tz: "2026-11-22T12:00:00.5+02:00",
        ts: "2026-11-22T10:00:00",
        f: 0.1,
        d: "1234567890123456789012345678.0123456789",
        b: "aGVsbG8=",
        'odd "name"': "18446744073709551615",
      },
      deep: [{ inner: [{ x: "9007199254740993" }, null] }, { inner: [] }, null],
      m: { one: "AAE=", none: null },
      bm: { "9007199254740993": 1.5 },
      plain: { a: 1, b: ["x", null], c: {} },
      ints: [[1, 2], [], null],
      lists: { empty: [], some: ["9007199254740993"] },
    };
    const expected = {
      ...first,
      st: {
        ...first.st,
        tz: "2026-11-22T10:00:00.500000Z",
        ts: "2026-11-22T10:00:00.000000",
        // A JSON number; the exact text is checked below.
        d: Number(first.st.d),
      },
    };
    ok(await server.request("POST", "table/nested/records", { body: [first, { k: 2 }] }));
    const { records: rows } = await records(server, "nested");
    assert.deepEqual(rows[0], expected);
    assert.ok(Object.values(rows[1]).slice(1).every((v) => v === null));
    // The decimal inside the struct is exact JSON text, not a float's.
    const raw = (await server.request("GET", "table/nested/records")).text;
    assert.match(raw, /"d":1234567890123456789012345678\.0123456789/);

    // What was read goes back in unchanged; a decimal with more digits than a double holds
    // goes back as a string, since DuckDB's JSON reader takes numbers as doubles.
    const text = /\{"k":1,.*?\}(?=,\{"k":2)/.exec(raw)?.[0];
    assert.ok(text, raw);
    ok(
      await server.request("POST", "table/nested/records", {
        body: `[${text.replace('{"k":1,', '{"k":3,').replace(/"d":([-\d.]+)/, '"d":"$1"')}]`,
        headers: { "content-type": "application/json" },
      }),
    );
    const again = (await records(server, "nested")).records.find((r: { k: number }) => r.k === 3);
    assert.deepEqual(again, { ...expected, k: 3 });
    const rawAgain = (await server.request("GET", "table/nested/records")).text;
    assert.equal(rawAgain.split('"d":1234567890123456789012345678.0123456789').length, 3);

    // The CSV export renders nested cells as the same JSON.
    const csv = await server.request("GET", "table/nested/records/csv");
    assert.equal(csv.status, 200);
    const line = csv.text.split("\n")[1]!;
    assert.ok(line.includes('""9007199254740993""'), line);
    assert.ok(line.includes('""2026-11-22T10:00:00.500000Z""'), line);
    assert.ok(line.includes('""aGVsbG8=""'), line);

    // A nested BLOB that is not base64 is refused like a top-level one, naming its column.
    const bad = errorOf(
      await server.request("POST", "table/nested/records", {
        body: [{ k: 4, m: { one: "not base64!" } }],
      }),
      422,
    );
    assert.equal((bad.details?.[0] as { column: string }).column, "m");
  } finally {
    await server.dispose();
  }
});

Deno.test("records: CSV export is streamed with a header and a file name", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/csvout", {
        body: {
          table: {
            columns: [{ name: "id", type: "int" }, { name: "text, with comma", type: "varchar" }, {
              name: "at",
              type: "timestamptz",
            }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    ok(
      await server.request("POST", "table/csvout/records", {
        body: [
          { id: 2, "text, with comma": 'say "hi"', at: "2026-01-01T00:00:00Z" },
          { id: 1, "text, with comma": "plain" },
          { id: 3, "text, with comma": "" },
          { id: 4, "text, with comma": "two\nlines" },
        ],
      }),
    );
    const answer = await server.request("GET", "table/csvout/records/csv");
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get("content-type") ?? "", /^text\/csv/);
    assert.match(
      answer.headers.get("content-disposition") ?? "",
      /^attachment; filename="csvout_\d{8}_\d{6}\.csv"$/,
    );
    assert.equal(
      answer.text,
      'id,"text, with comma",at\n1,plain,\n2,"say ""hi""",2026-01-01T00:00:00.000000Z\n3,"",\n4,"two\nlines",\n',
    );
    errorOf(await server.request("GET", "table/none/records/csv"), 404);
    const many = Array.from(
      { length: 20000 },
      (_, i) => ({ id: 100 + i, "text, with comma": `row ${i}` }),
    );
    ok(await server.request("POST", "table/csvout/records", { body: many }));
    const big = await server.request("GET", "table/csvout/records/csv");
    // Header, four rows (one spanning two lines inside its quotes), then the 20,000.
    assert.equal(big.text.trimEnd().split("\n").length, 1 + 5 + 20000);
  } finally {
    await server.dispose();
  }
});

/** The moment a CSV export's file name tells (`<table>_<YYYYMMDD_HHMMSS>.csv`), read as UTC. */
function fileNameTime(answer: Answer, table: string): number {
  const disposition = answer.headers.get("content-disposition") ?? "";
  const match = new RegExp(
    `^attachment; filename="${table}_(\\d{4})(\\d{2})(\\d{2})_(\\d{2})(\\d{2})(\\d{2})\\.csv"$`,
  ).exec(disposition);
  assert.ok(match, `a file name with the export time: ${disposition}`);
  const [year, month, day, hours, minutes, seconds] = match.slice(1).map(Number);
  return Date.UTC(year!, month! - 1, day!, hours!, minutes!, seconds!);
}

Deno.test("records: the CSV file name carries the export time, shifted by timezone_offset hours", async (t) => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/stamped", { body: { table: { columns: [] } } }));
    await t.step("UTC by default; the offset in hours, fractions included", async () => {
      const offsets: [string, number][] = [
        ["", 0],
        ["?timezone_offset=", 0],
        ["?timezone_offset=0", 0],
        ["?timezone_offset=9", 9],
        ["?timezone_offset=5.5", 5.5],
        ["?timezone_offset=5.75", 5.75],
        ["?timezone_offset=-3.5", -3.5],
        ["?timezone_offset=%2B14.0", 14],
        ["?timezone_offset=-24", -24],
        ["?timezone_offset=24", 24],
      ];
      for (const [query, hours] of offsets) {
        // The export happens between these two moments; the name is cut to the second.
        const before = Math.floor(Date.now() / 1000) * 1000;
        const answer = await server.request("GET", `table/stamped/records/csv${query}`);
        const after = Date.now();
        assert.equal(answer.status, 200, query);
        const told = fileNameTime(answer, "stamped") - hours * 3_600_000;
        assert.ok(
          before <= told && told <= after,
          `${query}: ${told} not in [${before}, ${after}]`,
        );
      }
    });
    await t.step("an offset that is no number of hours within a day is 400", async () => {
      for (
        const bad of ["abc", "25", "-24.5", "330", "1e1", "0x10", "NaN", "Infinity", "5,5", "+"]
      ) {
        const answer = await server.request(
          "GET",
          `table/stamped/records/csv?timezone_offset=${encodeURIComponent(bad)}`,
        );
        const error = errorOf(answer, 400);
        assert.match(error.message, /timezone_offset/, bad);
        assert.ok(error.message.includes(`"${bad}"`), error.message);
      }
      errorOf(
        await server.request(
          "GET",
          "table/stamped/records/csv?timezone_offset=1&timezone_offset=2",
        ),
        400,
      );
    });
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("records: a table loaded in large uploads still exports at the least memory limit", async () => {
  // Until a checkpoint, DuckDB keeps a large load's part of the key's index in memory it cannot
  // evict, and the export's sort then ran out of it: the store checkpoints after such loads.
  const server = await TestServer.start({ DUCKDB_MEMORY_LIMIT: "96MiB", DUCKDB_THREADS: "" });
  try {
    ok(
      await server.request("POST", "table/bulk", {
        body: {
          table: {
            columns: [{ name: "id", type: "bigint" }, { name: "name", type: "varchar" }, {
              name: "note",
              type: "varchar",
            }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    const rows = 1_000_000;
    for (const upload of [0, 1]) {
      const lines = ["id,name,note"];
      for (let i = upload * rows; i < (upload + 1) * rows; i++) {
        lines.push(`${i},name-${i},note number ${i} with some text`);
      }
      const file = new TextEncoder().encode(`${lines.join("\n")}\n`);
      const loaded = ok(
        await server.request("POST", "table/bulk/upload/csv?if_exists=append", {
          body: uploadForm(file, "bulk.csv"),
        }),
      );
      assert.equal(loaded.inserted, rows);
    }
    // Uncompressed: gzip of 100 MB on both sides cost seconds of CPU and is no part of this.
    const answer = await server.request("GET", "table/bulk/records/csv", {
      headers: { "accept-encoding": "identity" },
    });
    assert.equal(answer.status, 200);
    const lines = answer.text.trimEnd().split("\n");
    assert.equal(lines.length, 1 + 2 * rows);
    assert.equal(
      lines[2 * rows],
      `${2 * rows - 1},name-${2 * rows - 1},note number ${2 * rows - 1} with some text`,
    );
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("records: a large insert leaves no key index held in memory", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/many", {
        body: {
          table: {
            columns: [{ name: "id", type: "bigint" }, { name: "name", type: "varchar" }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    const body = Array.from({ length: 300_000 }, (_, i) => ({ id: i, name: `name-${i}` }));
    assert.equal(
      ok(await server.request("POST", "table/many/records", { body })).inserted,
      300_000,
    );
    const metrics = await server.request("GET", "/metrics");
    const index = value(samples(metrics.text), "table_service_storage_memory_by_use_bytes", {
      use: "art_index",
    });
    assert.ok(index < 256 * 1024, `${index} bytes of key index held in memory after the insert`);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: bad values inside lists and structs are named by row and column", async () => {
  const server = await TestServer.start();
  try {
    if (ENGINE === "postgres") {
      // PostgreSQL has no STRUCT: 422 naming it; bad values inside a list are named as here.
      const refused = errorOf(
        await server.request("POST", "table/nested", {
          body: {
            table: { columns: [{ name: "id", type: "int" }, { name: "s", type: "struct(a int)" }] },
          },
        }),
        422,
      );
      assert.deepEqual(refused.details, [{
        column: "s",
        message: 'Column "s": Type "STRUCT("a" INT)" does not exist on PostgreSQL (PostgreSQL ' +
          "has no nested type of this kind without a type of its own): use jsonb",
      }]);
      const columns = [{ name: "id", type: "int" }, { name: "l", type: "int[]" }];
      ok(await server.request("POST", "table/nested", { body: { table: { columns } } }));
      const bad = errorOf(
        await server.request("POST", "table/nested/records", {
          body: [{ id: 1, l: ["x"] }, { id: 2, l: [1, null] }, { id: 3, l: [1, "zz"] }, {
            id: "q",
          }],
        }),
        422,
      );
      assert.deepEqual(cellsOf(bad), [[0, "l"], [2, "l"], [3, "id"]]);
      assert.equal((await records(server, "nested")).total, 0);
      return;
    }
    ok(
      await server.request("POST", "table/nested", {
        body: {
          table: {
            columns: [
              { name: "id", type: "int" },
              { name: "l", type: "int[]" },
              { name: "s", type: "struct(a int)" },
            ],
          },
        },
      }),
    );
    const bad = errorOf(
      await server.request("POST", "table/nested/records", {
        body: [
          { id: 1, l: ["x"] },
          { id: 2, l: [1, null], s: { a: 3 } },
          { id: 3, s: { a: "zz" } },
          { id: "q" },
          { id: 6, s: 5 },
        ],
      }),
      422,
    );
    assert.deepEqual(
      cellsOf(bad),
      [[0, "l"], [2, "s"], [3, "id"], [4, "s"]],
    );
    assert.equal((await records(server, "nested")).total, 0);

    // As json_populate_record does for a composite type: a key naming no field is ignored,
    // a missing field is null.
    ok(
      await server.request("POST", "table/nested/records", {
        body: [{ id: 7, s: { x: 1 } }, { id: 8, s: { a: 1, x: 2 } }],
      }),
    );
    assert.deepEqual(
      (await records(server, "nested")).records.map((r: { s: unknown }) => r.s),
      [{ a: null }, { a: 1 }],
    );
  } finally {
    await server.dispose();
  }
});

Deno.test("records: unknown columns and bad values are reported together, in row order", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/mixed", {
        body: { table: { columns: [{ name: "id", type: "int", is_nullable: false }] } },
      }),
    );
    const bad = errorOf(
      await server.request("POST", "table/mixed/records", {
        body: [{ id: "a" }, { id: 8, zzz: 1 }, { id: "b" }, { id: null }],
      }),
      422,
    );
    assert.deepEqual(
      cellsOf(bad),
      [[0, "id"], [1, "zzz"], [2, "id"], [3, "id"]],
    );
    assert.match(bad.message, /zzz|not a valid/);
    assert.equal((await records(server, "mixed")).total, 0);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: rows without keys take every default, in one statement", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/blank", {
        body: {
          table: {
            columns: [
              { name: "id", type: "bigserial" },
              { name: "n", type: "int", default: "7" },
              { name: "s", type: "varchar" },
            ],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    const many = Array.from({ length: 5000 }, () => ({}));
    const answer = ok(await server.request("POST", "table/blank/records", { body: many }));
    assert.equal(answer.inserted, 5000);
    const { records: rows, total } = await records(server, "blank", "&limit=2&offset=4998");
    assert.equal(total, 5000);
    assert.deepEqual(rows, [{ id: 4999, n: 7, s: null }, { id: 5000, n: 7, s: null }]);
    ok(await server.request("POST", "table/empty", { body: {} }));
    assert.equal(
      ok(await server.request("POST", "table/empty/records", { body: [{}, {}, {}] })).inserted,
      3,
    );
    assert.equal((await records(server, "empty")).total, 3);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: concurrent small batches each keep their own keys, defaults and answers", async () => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/people", { body: { table: people } }));
    const send = (batches: unknown[][]) =>
      Promise.all(batches.map((body) => server.request("POST", "table/people/records", { body })));
    // Sent at once, so they are inserted in groups: a row without "city" must still take the
    // default even when a batch beside it names "city".
    const batch = (i: number) =>
      i % 2 === 0
        ? [{ id: i, name: `n${i}` }]
        : [{ id: i, name: `n${i}`, city: i % 4 === 1 ? null : "Oslo" }];
    const first = await send(Array.from({ length: 30 }, (_, i) => batch(i)));
    first.forEach((answer, i) => assert.equal(ok(answer).inserted, 1, `batch ${i}`));
    // One bad batch among good ones with the same keys fails alone.
    const second = await send([
      ...Array.from({ length: 10 }, (_, i) => [{ id: 30 + i, name: "x", age: i }]),
      [{ id: 100, name: "late", age: "old" }],
    ]);
    second.slice(0, 10).forEach((answer, i) => assert.equal(ok(answer).inserted, 1, `batch ${i}`));
    const bad = errorOf(second[10]!, 422);
    assert.equal(bad.type, "invalid_data");
    assert.deepEqual(
      cellsOf(bad),
      [[0, "age"]],
    );
    const { records: rows, total } = await records(server, "people");
    assert.equal(total, 40);
    rows.forEach((row: { id: number; city: string | null }) => {
      const city = row.id >= 30 || row.id % 2 === 0 ? "Lima" : row.id % 4 === 1 ? null : "Oslo";
      assert.equal(row.city, city, `row ${row.id}`);
    });
    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: time zones read and write as UTC whatever the server's TZ", async () => {
  const server = await TestServer.spawn({ TZ: "Asia/Tokyo" });
  try {
    ok(
      await server.request("POST", "table/zones", {
        body: {
          table: { columns: [{ name: "id", type: "int" }, { name: "at", type: "timestamptz" }] },
        },
      }),
    );
    ok(
      await server.request("POST", "table/zones/records", {
        body: [{ id: 1, at: "2026-01-01T00:00:00Z" }, { id: 2, at: "2026-01-01T00:00:00" }],
      }),
    );
    // Parallel reads open fresh connections; each must render in UTC.
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => records(server, "zones")),
    );
    for (const answer of answers) {
      assert.deepEqual(answer.records.map((r: { at: string }) => r.at), [
        "2026-01-01T00:00:00.000000Z",
        "2026-01-01T00:00:00.000000Z",
      ]);
    }
    const csv = await server.request("GET", "table/zones/records/csv");
    assert.equal(
      csv.text,
      "id,at\n1,2026-01-01T00:00:00.000000Z\n2,2026-01-01T00:00:00.000000Z\n",
    );
  } finally {
    await server.dispose();
  }
});

Deno.test("upload/json: fail, replace and append, objects and arrays, inference", async (t) => {
  const server = await TestServer.start();
  try {
    await t.step("a new table from a definition and rows as objects", async () => {
      const answer = ok(
        await server.request("POST", "table/up/upload/json", {
          body: {
            table: people,
            data: [{ id: 1, name: "Ada" }, { id: 2, name: "Grace", age: 85 }],
          },
        }),
      );
      assert.equal(answer.inserted, 2);
      assert.deepEqual(answer.table.columns.map((c: { name: string }) => c.name), [
        "id",
        "name",
        "age",
        "city",
      ]);
    });

    await t.step("if_exists=fail (the default) is 409 when the table exists", async () => {
      errorOf(await server.request("POST", "table/up/upload/json", { body: { data: [] } }), 409);
      errorOf(
        await server.request("POST", "table/up/upload/json?if_exists=random", {
          body: { data: [] },
        }),
        400,
      );
    });

    await t.step(
      "if_exists=append adds rows, positional or not, and checks a given definition",
      async () => {
        const answer = ok(
          await server.request("POST", "table/up/upload/json?if_exists=append", {
            body: { data: [[3, "Linus", 54], [4, "Ken"]] },
          }),
        );
        assert.equal(answer.inserted, 2);
        assert.equal((await records(server, "up")).total, 4);
        const mismatch = await server.request("POST", "table/up/upload/json?if_exists=append", {
          body: { table: { columns: [{ name: "id", type: "text" }] }, data: [] },
        });
        errorOf(mismatch, 422);
        ok(
          await server.request("POST", "table/up/upload/json?if_exists=append", {
            body: { table: people, data: [{ id: 5, name: "Barbara" }] },
          }),
        );
        errorOf(
          await server.request("POST", "table/up/upload/json?if_exists=append", {
            body: { data: [[6, "x", 1, "y", "extra"]] },
          }),
          422,
        );
        assert.equal((await records(server, "up")).total, 5);
      },
    );

    await t.step(
      "if_exists=append takes text, string and varchar as one type, as an inferred table has it",
      async () => {
        ok(
          await server.request("POST", "table/words/upload/json", {
            body: { data: [{ word: "a", tags: ["x"] }] },
          }),
        );
        for (const type of ["text", "string", "varchar"]) {
          const answer = ok(
            await server.request("POST", "table/words/upload/json?if_exists=append", {
              body: {
                table: {
                  columns: [{ name: "word", type }, { name: "tags", type: `${type}[]` }],
                },
                data: [{ word: type, tags: [type] }],
              },
            }),
          );
          assert.equal(answer.inserted, 1, type);
        }
        assert.equal((await records(server, "words")).total, 4);
        errorOf(
          await server.request("POST", "table/words/upload/json?if_exists=append", {
            body: {
              table: {
                columns: [{ name: "word", type: "integer" }, { name: "tags", type: "text[]" }],
              },
              data: [],
            },
          }),
          422,
        );
      },
    );

    await t.step("if_exists=replace swaps in a new definition and rows", async () => {
      const answer = ok(
        await server.request("POST", "table/up/upload/json?if_exists=replace", {
          body: {
            data: [[1.5, "x"]],
            table: { columns: [{ name: "score", type: "double" }, { name: "tag", type: "text" }] },
          },
        }),
      );
      assert.deepEqual(
        answer.table.columns.map((c: { id: number; name: string }) => [c.id, c.name]),
        [[1, "score"], [2, "tag"]],
      );
      assert.deepEqual((await records(server, "up")).records, [{ score: 1.5, tag: "x" }]);
    });

    await t.step("append to a missing table creates it", async () => {
      ok(
        await server.request("POST", "table/fresh/upload/json?if_exists=append", {
          body: { table: people, data: [{ id: 1, name: "a" }] },
        }),
      );
      assert.equal((await records(server, "fresh")).total, 1);
    });

    await t.step(
      "without a definition the columns and types are inferred from the rows",
      async () => {
        const answer = ok(
          await server.request("POST", "table/inferred/upload/json", {
            body: {
              data: [
                {
                  n: 1,
                  x: 1.5,
                  s: "a",
                  ok: true,
                  day: "2026-11-22",
                  at: "2026-11-22T10:00:00",
                  obj: { k: 1 },
                  list: [1, 2],
                },
                {
                  n: 2,
                  x: 2,
                  s: "b",
                  ok: false,
                  day: "2026-11-23",
                  at: "2026-11-22T11:00:00",
                  obj: { k: 2 },
                  list: [],
                  late: "z",
                },
              ],
            },
          }),
        );
        const types = Object.fromEntries(
          answer.table.columns.map((c: { name: string; type: string }) => [c.name, c.type]),
        );
        // On PostgreSQL, its canonical names, and an object, having no STRUCT, is json.
        assert.deepEqual(
          types,
          ENGINE === "postgres"
            ? {
              n: "bigint",
              x: "double precision",
              s: "character varying",
              ok: "boolean",
              day: "date",
              at: "timestamp without time zone",
              obj: "json",
              list: "bigint[]",
              late: "character varying",
            }
            : {
              n: "BIGINT",
              x: "DOUBLE",
              s: "VARCHAR",
              ok: "BOOLEAN",
              day: "DATE",
              at: "TIMESTAMP",
              obj: "STRUCT(k BIGINT)",
              list: "BIGINT[]",
              late: "VARCHAR",
            },
        );
        assert.equal(answer.inserted, 2);
        assert.equal((await records(server, "inferred")).records[1].late, "z");
      },
    );

    await t.step(
      "positional rows without a definition are 422; bad envelopes are 400",
      async () => {
        errorOf(
          await server.request("POST", "table/arrays/upload/json", { body: { data: [[1, 2]] } }),
          422,
        );
        for (
          const body of [
            '{"data": {"a": 1}}',
            '[{"a": 1}]',
            '{"data": [{"a": 1}, [1]]}',
            '{"table": 5, "data": []}',
            '{"table": {"columns": "x"}, "data": []}',
          ]
        ) {
          errorOf(
            await server.request("POST", "table/bad/upload/json", {
              body,
              headers: { "content-type": "application/json" },
            }),
            400,
          );
        }
        errorOf(await server.request("GET", "table/bad"), 404);
        errorOf(await server.request("GET", "table/arrays"), 404);
      },
    );

    await t.step(
      "a failed upload leaves no table behind, and replace failing keeps the old one",
      async () => {
        errorOf(
          await server.request("POST", "table/half/upload/json", {
            body: { table: people, data: [{ id: 1, name: "a" }, { id: 1, name: "b" }] },
          }),
          409,
        );
        errorOf(await server.request("GET", "table/half"), 404);
        const before = await records(server, "up");
        errorOf(
          await server.request("POST", "table/up/upload/json?if_exists=replace", {
            body: { table: people, data: [{ id: 1, name: null }] },
          }),
          422,
        );
        assert.deepEqual(await records(server, "up"), before);
        assert.deepEqual(
          ok(await server.request("GET", "table/up")).table.columns.map((c: { name: string }) =>
            c.name
          ),
          ["score", "tag"],
        );
      },
    );

    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});

Deno.test("uploads: bodies over MAX_UPLOAD_BYTES are 413, declared or streamed, and leave nothing", async () => {
  const server = await TestServer.start({ MAX_UPLOAD_BYTES: "64KiB" });
  try {
    ok(
      await server.request("POST", "table/small", {
        body: { table: { columns: [{ name: "v", type: "text" }] } },
      }),
    );
    const big = JSON.stringify(
      Array.from({ length: 5000 }, (_, i) => ({ v: `value ${i} ${"x".repeat(20)}` })),
    );
    errorOf(
      await server.request("POST", "table/small/records", {
        body: big,
        headers: { "content-type": "application/json" },
      }),
      413,
    );
    // A chunked body that never ends: the answer must come without the server reading it all.
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 16384;
        controller.enqueue(
          new TextEncoder().encode(
            sent === 16384 ? "[" + '{"v":"aaaa"},'.repeat(1260) : '{"v":"aaaa"},'.repeat(1260),
          ),
        );
        if (sent > 64 * 1024 * 1024) controller.close();
      },
    });
    const response = await fetch(`${server.base}/api/v1/table/small/records`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: endless,
    }).catch(() => undefined);
    if (response) {
      assert.equal(response.status, 413);
      await response.body?.cancel();
    }
    assert.ok(sent < 64 * 1024 * 1024, `the server read ${sent} bytes before answering`);
    assert.equal((await records(server, "small")).total, 0);
    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: a body of several spool parts loads whole, in order, and cleans up", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/large", {
        body: {
          table: {
            columns: [{ name: "id", type: "bigint" }, { name: "text", type: "varchar" }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    // About 45 MB: more than one 32 MiB part of the spool.
    const filler = "x".repeat(150);
    const rows = Array.from({ length: 250_000 }, (_, i) => ({ id: i, text: `${i}${filler}` }));
    const body = JSON.stringify(rows);
    assert.ok(body.length > 40 * 1024 * 1024);
    const json = { "content-type": "application/json" };
    assert.equal(
      ok(await server.request("POST", "table/large/records", { body, headers: json })).inserted,
      250_000,
    );
    const page = await records(server, "large", "&offset=249999&limit=1");
    assert.equal(page.total, 250_000);
    assert.deepEqual(page.records, [{ id: 249999, text: `249999${filler}` }]);
    // The same body again conflicts on every key: 409, and the table keeps its rows.
    errorOf(
      await server.request("POST", "table/large/records", { body, headers: json }),
      409,
    );
    assert.equal((await records(server, "large", "&limit=1")).total, 250_000);
    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: a body still arriving holds no lock on its table or schema", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/slow", {
        body: { table: { columns: [{ name: "id", type: "bigint" }] } },
      }),
    );
    let release = () => {};
    const released = new Promise<void>((resolve) => release = resolve);
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoder.encode('[{"id": 1},'));
        await released;
        controller.enqueue(encoder.encode('{"id": 2}]'));
        controller.close();
      },
    });
    const stalled = fetch(`${server.base}/api/v1/table/slow/records`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body,
    });
    // If the stalled upload held the locks, these would wait for it: the guard below
    // releases the body after 20 s so the test fails instead of hanging.
    let guarded = false;
    const guard = setTimeout(() => {
      guarded = true;
      release();
    }, 20_000);
    // Creating a schema that exists takes the schema's lock before it answers 409.
    errorOf(await server.request("POST", "schema/public"), 409);
    ok(await server.request("POST", "table/other", { body: {} }));
    ok(await server.request("DELETE", "table/other"));
    ok(await server.request("POST", "table/slow/records", { body: [{ id: 3 }] }));
    clearTimeout(guard);
    assert.equal(guarded, false, "DDL waited for a body that was still arriving");
    release();
    const answer = await stalled;
    assert.equal(answer.status, 200);
    assert.equal((await answer.json()).inserted, 2);
    assert.equal((await records(server, "slow")).total, 3);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: concurrent inserts into one table all land", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/shared", {
        body: {
          table: {
            columns: [{ name: "id", type: "bigserial" }, { name: "client", type: "int" }, {
              name: "n",
              type: "int",
            }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    let acknowledged = 0;
    await Promise.all(Array.from({ length: 8 }, async (_, client) => {
      for (let batch = 0; batch < 10; batch++) {
        const rows = Array.from({ length: 100 }, (_, n) => ({ client, n: batch * 100 + n }));
        const answer = await server.request("POST", "table/shared/records", { body: rows });
        if (answer.status === 200) acknowledged += answer.body.inserted;
        else assert.fail(`insert failed: ${answer.status} ${answer.text}`);
      }
    }));
    assert.equal(acknowledged, 8000);
    assert.equal((await records(server, "shared", "&limit=1")).total, 8000);
  } finally {
    await server.dispose();
  }
});

Deno.test("upload/json replace is atomic for concurrent readers", async () => {
  const server = await TestServer.start();
  try {
    const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, v: `r${i}` }));
    ok(await server.request("POST", "table/swap/upload/json", { body: { data: rows(100) } }));
    const stop = Date.now() + 2500;
    const seen = new Set<number>();
    const failures: string[] = [];
    const reader = async () => {
      while (Date.now() < stop) {
        const answer = await server.request("GET", "table/swap/records?limit=1");
        if (answer.status !== 200) failures.push(`${answer.status} ${answer.text}`);
        else seen.add(answer.body.total);
      }
    };
    const writer = async () => {
      for (let i = 0; Date.now() < stop; i++) {
        const answer = await server.request("POST", "table/swap/upload/json?if_exists=replace", {
          body: { data: rows(i % 2 ? 200 : 100) },
        });
        if (answer.status !== 200) failures.push(`${answer.status} ${answer.text}`);
      }
    };
    await Promise.all([reader(), reader(), reader(), writer()]);
    assert.deepEqual(failures, []);
    for (const total of seen) {
      assert.ok(total === 100 || total === 200, `a reader saw ${total} rows`);
    }
  } finally {
    await server.dispose();
  }
});

Deno.test("records and upload/json: a key repeated inside one row is 400 naming the row and key", async () => {
  const server = await TestServer.start();
  try {
    const headers = { "content-type": "application/json" };
    ok(await server.request("POST", "table/pairs", { body: { table: { columns: [] } } }));
    ok(
      await server.request("PUT", "table/pairs", {
        body: { table: { columns: [{ name: "a", type: "int" }, { name: "b", type: "int" }] } },
      }),
    );
    // The body is text: JSON.stringify cannot repeat a key. Far past the sample of keys the
    // repeat is found too, as DuckDB reads the rows.
    const many = Array.from({ length: 1500 }, (_, i) => `{"a": ${i}, "b": ${i}}`);
    const late = [...many.slice(0, 1200), '{"b": 1, "a": 2, "b": 3}', ...many.slice(1200)];
    for (
      const [path, body, row, key] of [
        ["table/pairs/records", '[{"a": 1}, {"a": 1, "a": 2}]', 1, "a"],
        ["table/pairs/records?on_conflict=fail", `[${late.join(",")}]`, 1200, "b"],
        ["table/fresh/upload/json", '{"data": [{"b": 1, "a": 2, "b": 3}]}', 0, "b"],
        [
          "table/pairs/upload/json?if_exists=append",
          '{"data": [{"a": 1}, {"a": 1, "a": 2}]}',
          1,
          "a",
        ],
      ] as const
    ) {
      const error = errorOf(await server.request("POST", path, { body, headers }), 400);
      assert.match(error.message, new RegExp(`Row ${row} .*"${key}"`), path);
      assert.deepEqual(
        error.details?.map((d) => {
          const { row, column } = d as { row: number; column: string };
          return [row, column];
        }),
        [
          [row, key],
        ],
        path,
      );
    }
    assert.equal((await records(server, "pairs")).total, 0);
    errorOf(await server.request("GET", "table/fresh"), 404);
    await assertSpoolEmpty(server);
  } finally {
    await server.dispose();
  }
});

Deno.test("records, PATCH and upload/json: a bit string column takes its text", async () => {
  const server = await TestServer.start();
  try {
    const columns = [{ name: "id", type: "integer" }, { name: "bs", type: "bitstring" }];
    ok(await server.request("POST", "table/bits", { body: { table: { columns } } }));
    ok(await server.request("POST", "table/bits/records", { body: [{ id: 1, bs: "101" }] }));
    ok(
      await server.request("POST", "table/bits/upload/json?if_exists=append", {
        body: { data: [{ id: 2, bs: "0011" }, { id: 3, bs: null }] },
      }),
    );
    const read = async () =>
      ok(await server.request("GET", "table/bits/records?order=id")).records.map(
        (r: { bs: unknown }) => r.bs,
      );
    assert.deepEqual(await read(), ["101", "0011", null]);
    ok(await server.request("PATCH", "table/bits/records?id=eq.3", { body: { bs: "1" } }));
    assert.deepEqual(await read(), ["101", "0011", "1"]);

    // A text that is no bit string is 422 on every path, and changes nothing.
    for (
      const [method, path, body] of [
        ["POST", "table/bits/records", [{ id: 4, bs: "102" }]],
        ["PATCH", "table/bits/records?all=true", { bs: "10x" }],
        ["POST", "table/bits/upload/json?if_exists=append", { data: [{ id: 4, bs: "2" }] }],
      ] as const
    ) {
      const error = errorOf(await server.request(method, path, { body }), 422);
      assert.equal(error.type, "invalid_data", `${method} ${path}`);
      // PostgreSQL checks bit strings itself: its message, without details (docs/api.md).
      if (ENGINE === "duckdb") {
        const [detail] = (error.details ?? []) as { column?: string }[];
        assert.equal(detail?.column, "bs", `${method} ${path}: ${error.message}`);
      }
    }
    assert.deepEqual(await read(), ["101", "0011", "1"]);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: skip and update keep every row whose unique key holds a null, since a null matches nothing", async () => {
  const server = await TestServer.start();
  try {
    const sorted = async (table: string) =>
      (ok(await server.request("GET", `table/${table}/records`)).records as { v: number }[])
        .map((r) => JSON.stringify(r)).sort();
    const table = (columns: string[]) => ({
      table: {
        columns: [...columns.map((name) => ({ name, type: "varchar" })), {
          name: "v",
          type: "integer",
        }],
        constraints: { unique: [{ columns }] },
      },
    });
    ok(await server.request("POST", "table/nullkeys", { body: table(["e"]) }));
    const rows = [{ e: null, v: 1 }, { e: "a", v: 2 }, { e: null, v: 3 }, { e: "a", v: 4 }];
    const skipped = ok(
      await server.request("POST", "table/nullkeys/records?on_conflict=skip", { body: rows }),
    );
    assert.deepEqual([skipped.inserted, skipped.skipped], [3, 1]);
    const updated = ok(
      await server.request("POST", "table/nullkeys/records?on_conflict=update", { body: rows }),
    );
    assert.deepEqual([updated.inserted, updated.updated], [2, 2]);
    assert.deepEqual(await sorted("nullkeys"), [
      '{"e":"a","v":4}',
      '{"e":null,"v":1}',
      '{"e":null,"v":1}',
      '{"e":null,"v":3}',
      '{"e":null,"v":3}',
    ]);
    // A key column the rows leave out is null in each of them.
    const absent = ok(
      await server.request("POST", "table/nullkeys/records?on_conflict=skip", {
        body: [{ v: 5 }, { v: 6 }],
      }),
    );
    assert.deepEqual([absent.inserted, absent.skipped], [2, 0]);
    // Part of a composite key null: the rows stay apart.
    ok(await server.request("POST", "table/pairs", { body: table(["a", "b"]) }));
    const pairs = ok(
      await server.request("POST", "table/pairs/records?on_conflict=update", {
        body: [{ a: "1", b: null, v: 1 }, { a: "1", b: null, v: 2 }, { a: "1", b: "2", v: 3 }, {
          a: "1",
          b: "2",
          v: 4,
        }],
      }),
    );
    assert.deepEqual([pairs.inserted, pairs.updated], [3, 1]);
    assert.deepEqual(await sorted("pairs"), [
      '{"a":"1","b":"2","v":4}',
      '{"a":"1","b":null,"v":1}',
      '{"a":"1","b":null,"v":2}',
    ]);
  } finally {
    await server.dispose();
  }
});

Deno.test("records: under update a row that leaves out its serial key takes the next value, and updates the row that holds it", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/drawn", {
        body: {
          table: {
            columns: [{ name: "id", type: "serial" }, { name: "v", type: "varchar" }],
            constraints: { primary_key: { columns: ["id"] } },
          },
        },
      }),
    );
    ok(await server.request("POST", "table/drawn/records", { body: [{ v: "a" }] }));
    ok(await server.request("POST", "table/drawn/records", { body: [{ id: 2, v: "b" }] }));
    // The sequence draws 2, which row "b" holds, then 3.
    const answer = ok(
      await server.request("POST", "table/drawn/records?on_conflict=update", {
        body: [{ v: "c" }, { v: "d" }],
      }),
    );
    assert.deepEqual([answer.inserted, answer.updated], [1, 1]);
    assert.deepEqual(ok(await server.request("GET", "table/drawn/records")).records, [
      { id: 1, v: "a" },
      { id: 2, v: "c" },
      { id: 3, v: "d" },
    ]);
    // A constant default gives every such row one key: no 500 from PostgreSQL, which cannot
    // update one row twice in a statement.
    ok(
      await server.request("POST", "table/fixed", {
        body: {
          table: {
            columns: [{ name: "k", type: "varchar", default: "'x'" }, {
              name: "v",
              type: "integer",
            }],
            constraints: { unique: [{ columns: ["k"] }] },
          },
        },
      }),
    );
    const fixed = ok(
      await server.request("POST", "table/fixed/records?on_conflict=update", {
        body: [{ v: 1 }, { v: 2 }],
      }),
    );
    assert.deepEqual([fixed.inserted, fixed.updated], [1, 1]);
  } finally {
    await server.dispose();
  }
});
