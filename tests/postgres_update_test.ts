import assert from "node:assert/strict";
import { Database } from "../src/store/postgres/database.ts";
import { postgresEnv, postgresTest } from "./helpers/postgres.ts";
import { errorOf, ok, snapshot, TestServer } from "./helpers/server.ts";
import { KEYED_CUSTOMERS_TABLE } from "./fixtures/tables.ts";
import { columnsOf, put } from "./helpers/table_requests.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const customers = KEYED_CUSTOMERS_TABLE;

await postgresTest(
  `PUT /table/{name} on PostgreSQL alters the table in place, keeping rows and ids`,
  async (t, postgres) => {
    const env = await postgresEnv(postgres);
    const server = await TestServer.start(env);
    const second = await TestServer.start(env);
    const database = await Database.open({ url: env.DATABASE_URL });
    const rows = (sql: string) => database.withSession((s) => s.rows(sql));
    /** Every definition and the rows of the customers table, wherever it lives. */
    const state = async (table = `public.customers`) =>
      JSON.stringify({ definitions: await snapshot(server), rows: await rows(`TABLE ${table}`) });
    /** Asserts the request is refused with `status` and that nothing changed. */
    const refused = async (send: () => Promise<Json>, status: number, message: RegExp) => {
      const before = await state();
      const error = errorOf(await send(), status);
      assert.match(error.message, message);
      assert.equal(await state(), before);
      return error;
    };
    try {
      ok(await server.request("POST", "table/customers", { body: { table: customers } }));
      await database.withSession((s) =>
        s.run(`INSERT INTO public.customers (email, name, score)
          VALUES ('a@x.org', 'Ann', '10'), ('b@x.org', NULL, '20'), ('c@x.org', 'Cy', NULL)`)
      );

      await t.step("a GET response sent back unchanged is a no-op", async () => {
        const before = await state();
        const got = ok(await server.request("GET", "table/customers"));
        assert.deepEqual(ok(await put(server, "customers", got.table)), got);
        assert.equal(await state(), before);
      });

      await t.step("renaming a column keeps its id and its values", async () => {
        const columns = await columnsOf(server, "customers");
        columns[2].name = "Full Name";
        const { table } = ok(await put(server, "customers", { columns }));
        assert.deepEqual(table.columns.map((c: Json) => [c.id, c.name]), [
          [1, "id"],
          [2, "email"],
          [3, "Full Name"],
          [4, "score"],
        ]);
        const names = await rows(`SELECT "Full Name" FROM customers ORDER BY id`);
        assert.deepEqual(names.map((r) => r["Full Name"]), ["Ann", null, "Cy"]);
      });

      await t.step(
        "a failing cast is 422 naming the failing rows, and changes nothing",
        async () => {
          const columns = await columnsOf(server, "customers");
          columns[1].type = "integer";
          const error = await refused(
            () => put(server, "customers", { columns }),
            422,
            /cannot be cast to integer/,
          );
          assert.deepEqual(error.details!.map((d: Json) => [d.row, d.column, d.value]), [
            [0, "email", "a@x.org"],
            [1, "email", "b@x.org"],
            [2, "email", "c@x.org"],
          ]);
        },
      );

      await t.step("retyping casts the existing values, and says it altered", async () => {
        const columns = await columnsOf(server, "customers");
        columns[3].type = "integer";
        const answer = ok(await put(server, "customers", { columns }));
        assert.equal(answer.table.columns[3].type, "integer");
        assert.equal(answer.table.columns[3].id, 4);
        const scores = await rows(`SELECT score FROM customers ORDER BY id`);
        assert.deepEqual(scores.map((r) => r.score), [10, 20, null]);
      });

      await t.step("a type no cast reaches is 422 and changes nothing", async () => {
        const columns = await columnsOf(server, "customers");
        columns[3].type = "date";
        await refused(
          () => put(server, "customers", { columns }),
          422,
          /cannot be converted from integer to date/,
        );
      });

      await t.step("NOT NULL is refused while nulls exist, naming their rows", async () => {
        const columns = await columnsOf(server, "customers");
        columns[2].is_nullable = false;
        const error = await refused(
          () => put(server, "customers", { columns }),
          422,
          /is null, and the column is to be NOT NULL/,
        );
        assert.deepEqual(error.details!.map((d: Json) => [d.row, d.column]), [[1, "Full Name"]]);
      });

      await t.step("new columns get new ids and their default in every row", async () => {
        const columns = await columnsOf(server, "customers");
        const { table } = ok(
          await put(server, "customers", {
            columns: [
              ...columns,
              { name: "country", type: "varchar", default: "'NL'", is_nullable: false },
              { name: "note", type: "text" },
            ],
          }),
        );
        assert.deepEqual(table.columns.map((c: Json) => c.id), [1, 2, 3, 4, 5, 6]);
        assert.equal(table.columns[4].is_nullable, false);
        const added = await rows(`SELECT country, note FROM customers ORDER BY id`);
        assert.deepEqual(added.map((r) => [r.country, r.note]), [
          ["NL", null],
          ["NL", null],
          ["NL", null],
        ]);
        await refused(
          () =>
            put(server, "customers", {
              columns: [...table.columns, { name: "must", type: "int", is_nullable: false }],
            }),
          422,
          /NOT NULL without a default/,
        );
      });

      await t.step("a dropped column's id is never reused", async () => {
        const columns = await columnsOf(server, "customers");
        const { table } = ok(
          await put(server, "customers", {
            columns: [...columns.filter((c: Json) => c.name !== "note"), {
              name: "later",
              type: "boolean",
            }],
          }),
        );
        assert.deepEqual(table.columns.map((c: Json) => [c.id, c.name]).slice(4), [
          [5, "country"],
          [7, "later"],
        ]);
        const [first] = await rows(`SELECT * FROM customers ORDER BY id LIMIT 1`);
        assert.equal("note" in first!, false);
      });

      await t.step("a new unique key over duplicates is 409 naming the repeat", async () => {
        const { table } = ok(await server.request("GET", "table/customers"));
        const error = await refused(
          () =>
            put(server, "customers", {
              constraints: { ...table.constraints, unique: [{ columns: ["country"] }] },
            }),
          409,
          /repeats the unique constraint/,
        );
        assert.deepEqual(error.details!.map((d: Json) => [d.row, d.value]), [[1, "NL"], [2, "NL"]]);
      });

      await t.step("keys are dropped and added, and the columns keep their ids", async () => {
        const { table } = ok(await server.request("GET", "table/customers"));
        const { table: after } = ok(
          await put(server, "customers", {
            constraints: {
              primary_key: { name: "by_mail", columns: ["email"] },
              unique: [{ name: "by_id", columns: ["id"] }],
            },
          }),
        );
        assert.deepEqual(after.constraints.primary_key, { name: "by_mail", columns: ["email"] });
        assert.deepEqual(after.constraints.unique, [{ name: "by_id", columns: ["id"] }]);
        assert.deepEqual(
          after.columns.map((c: Json) => c.id),
          table.columns.map((c: Json) => c.id),
        );
        const kinds = await rows(
          `SELECT contype, count(*)::int AS n FROM pg_constraint
           WHERE conrelid = 'public.customers'::regclass GROUP BY contype ORDER BY contype`,
        );
        assert.deepEqual(kinds.map((r) => [r.contype, r.n]), [["p", 1], ["u", 1]]);
        ok(await put(server, "customers", { constraints: table.constraints }));
      });

      await t.step(
        "a foreign key is added after its orphans are refused, and dropped",
        async () => {
          ok(
            await server.request("POST", "table/orders", {
              body: {
                table: {
                  columns: [{ name: "n", type: "integer" }, { name: "who", type: "integer" }],
                },
              },
            }),
          );
          await database.withSession((s) => s.run(`INSERT INTO orders VALUES (1, 1), (2, 99)`));
          const fk = {
            foreign_keys: [{ column: "who", reference_table: "customers", reference_column: "id" }],
          };
          const error = errorOf(await put(server, "orders", { constraints: fk }), 422);
          assert.match(
            error.message,
            /Value "99" of column "who" in row 1 has no match in customers\.id/,
          );
          await database.withSession((s) => s.run(`DELETE FROM orders WHERE who = 99`));
          const { table } = ok(await put(server, "orders", { constraints: fk }));
          assert.equal(table.constraints.foreign_keys[0].reference_table, "customers");
          errorOf(await server.request("DELETE", "table/customers"), 409);
          await refused(
            () => put(server, "customers", { schema: "elsewhere" }),
            404,
            /Schema "elsewhere" does not exist/,
          );
          ok(await put(server, "orders", { constraints: { foreign_keys: [] } }));
          ok(await server.request("DELETE", "table/orders"));
        },
      );

      await t.step(
        "the table is renamed and moved between schemas, ids and rows kept",
        async () => {
          const before = await columnsOf(server, "customers");
          ok(await server.request("POST", "schema/archive"));
          const { table } = ok(
            await put(server, "customers", { name: "Clients", schema: "archive" }),
          );
          assert.equal(table.schema, "archive");
          assert.equal(table.name, "Clients");
          assert.deepEqual(table.columns.map((c: Json) => c.id), before.map((c: Json) => c.id));
          assert.match(table.columns[0].default, /^nextval\('archive\./);
          errorOf(await server.request("GET", "table/customers"), 404);
          const moved = await rows(`SELECT email FROM archive."Clients" ORDER BY id`);
          assert.deepEqual(moved.map((r) => r.email), ["a@x.org", "b@x.org", "c@x.org"]);
          const serial = await rows(
            `INSERT INTO archive."Clients" (email) VALUES ('d@x.org') RETURNING id`,
          );
          assert.equal(serial[0]!.id, 4);
        },
      );

      await t.step(
        "two concurrent updates take turns: one wins, the other sees it or is 409",
        async () => {
          const columns = await columnsOf(server, "Clients", "archive");
          const rename = (to: string) => {
            const wanted = structuredClone(columns);
            wanted[2].name = to;
            return put(
              server === undefined ? second : second,
              "Clients",
              { columns: wanted },
              "?schema=archive",
            );
          };
          const answers = await Promise.all([
            put(server, "Clients", {
              columns: columns.map((c: Json, i: number) => i === 2 ? { ...c, name: "first" } : c),
            }, "?schema=archive"),
            rename("second"),
          ]);
          assert.ok(
            answers.every((a) => a.status === 200 || a.status === 409),
            JSON.stringify(answers.map((a) => a.status)),
          );
          const final = await columnsOf(server, "Clients", "archive");
          assert.ok(["first", "second"].includes(final[2].name));
          assert.equal(final[2].id, 3);
          const attributes = await rows(
            `SELECT count(*)::int AS n FROM pg_attribute
           WHERE attrelid = 'archive."Clients"'::regclass AND attnum > 0 AND NOT attisdropped
             AND left(attname, 1) <> chr(1)`,
          );
          assert.equal(attributes[0]!.n, final.length);
        },
      );

      await t.step(
        "reordering columns rebuilds the table in the new order, rows and keys kept",
        async () => {
          const columns = await columnsOf(server, "Clients", "archive");
          const before = await rows(`SELECT count(*)::int AS n FROM archive."Clients"`);
          const wanted = [columns[1], columns[0], ...columns.slice(2)];
          const { table } = ok(
            await put(server, "Clients", { columns: wanted }, "?schema=archive"),
          );
          assert.deepEqual(table.columns.map((c: Json) => c.id), wanted.map((c: Json) => c.id));
          const attributes = await rows(
            `SELECT attname FROM pg_attribute
             WHERE attrelid = 'archive."Clients"'::regclass AND attnum > 0 AND NOT attisdropped
               AND left(attname, 1) <> chr(1) ORDER BY attnum`,
          );
          assert.deepEqual(attributes.map((r) => r.attname), wanted.map((c: Json) => c.name));
          assert.deepEqual(
            await rows(`SELECT count(*)::int AS n FROM archive."Clients"`),
            before,
          );
          // No name of the passing table is left behind.
          const passing = await rows(
            `SELECT conname FROM pg_constraint WHERE strpos(conname, chr(1)) > 0`,
          );
          assert.deepEqual(passing, []);
        },
      );
    } finally {
      await database.close();
      await second.dispose();
      await server.dispose();
    }
  },
);

await postgresTest(
  "PUT adds columns on PostgreSQL after dropped ones have spent its 1,600 places, keeping rows, ids, keys, serials and foreign keys",
  async (_t, postgres) => {
    const env = await postgresEnv(postgres);
    const server = await TestServer.start(env);
    const database = await Database.open({ url: env.DATABASE_URL });
    const rows = (sql: string) => database.withSession((s) => s.rows(sql));
    const numbered = (prefix: string, count: number) =>
      Array.from({ length: count }, (_, i) => ({ name: `${prefix}${i}`, type: "integer" }));
    const records = (table: string, body: Json) =>
      server.request("POST", `table/${table}/records`, { body });
    try {
      ok(
        await server.request("POST", "table/parents", {
          body: {
            table: {
              columns: [{ name: "id", type: "integer" }],
              constraints: { primary_key: { columns: ["id"] } },
            },
          },
        }),
      );
      ok(await records("parents", [{ id: 1 }, { id: 2 }]));
      const reference = (column: string, table: string) => ({
        column,
        reference_table: table,
        reference_column: "id",
      });
      ok(
        await server.request("POST", "table/wide", {
          body: {
            table: {
              columns: [
                { name: "id", type: "serial" },
                { name: "code", type: "varchar", is_nullable: false },
                { name: "parent", type: "integer" },
                { name: "up", type: "integer" },
                { name: "ticket", type: "serial" },
              ],
              constraints: {
                primary_key: { columns: ["id"] },
                unique: [{ columns: ["code"] }],
                foreign_keys: [reference("parent", "parents"), reference("up", "wide")],
              },
            },
          },
        }),
      );
      ok(
        await server.request("POST", "table/children", {
          body: {
            table: {
              columns: [{ name: "wide_id", type: "integer" }],
              constraints: { foreign_keys: [reference("wide_id", "wide")] },
            },
          },
        }),
      );
      ok(
        await records("wide", [
          { code: "a", parent: 1 },
          { code: "b", parent: 2, up: 1 },
          { code: "c", up: 2 },
        ]),
      );
      ok(await records("children", [{ wide_id: 1 }]));
      const first = await columnsOf(server, "wide");
      ok(await put(server, "wide", { columns: [...first, ...numbered("c", 1_500)] }));

      // 1 + 5 + 1,500 places are taken; 200 more pass PostgreSQL's 1,600 unless the places
      // of the 1,500 dropped here are given back first. A serial column is renamed on the way.
      const renamed: Record<string, string> = { code: "label", ticket: "ticket_no" };
      const kept = first.map((c: Json) => ({ ...c, name: renamed[c.name] ?? c.name }));
      const { table } = ok(
        await put(server, "wide", { columns: [...kept, ...numbered("e", 200)] }),
      );
      assert.deepEqual(
        table.columns.slice(0, 5).map((c: Json) => [c.id, c.name]),
        [[1, "id"], [2, "label"], [3, "parent"], [4, "up"], [5, "ticket_no"]],
      );
      assert.equal(table.columns.length, 205);
      assert.deepEqual(table.constraints.foreign_keys.map((fk: Json) => fk.column).sort(), [
        "parent",
        "up",
      ]);
      const [places] = await rows(
        `SELECT max(attnum)::int AS n FROM pg_attribute WHERE attrelid = 'public.wide'::regclass`,
      );
      assert.equal(places!.n, 206);

      const page = ok(await server.request("GET", "table/wide/records?select=id,label,up"));
      assert.deepEqual(page.records, [
        { id: 1, label: "a", up: null },
        { id: 2, label: "b", up: 1 },
        { id: 3, label: "c", up: 2 },
      ]);
      // The serial goes on where it was; the keys and every foreign key still hold.
      ok(await records("wide", [{ label: "d", e0: 7 }]));
      const [next] = await rows(`SELECT id, ticket_no FROM public.wide WHERE label = 'd'`);
      assert.deepEqual({ ...next }, { id: 4, ticket_no: 4 });
      errorOf(await records("wide", [{ label: "a" }]), 409);
      errorOf(await records("wide", [{ label: "x", parent: 99 }]), 422);
      errorOf(await records("wide", [{ label: "y", up: 99 }]), 422);
      errorOf(await records("children", [{ wide_id: 99 }]), 422);
      errorOf(await server.request("DELETE", "table/wide"), 409);
      const passing = await rows(
        `SELECT conname FROM pg_constraint WHERE strpos(conname, chr(1)) > 0`,
      );
      assert.deepEqual(passing, []);
      // The serial's sequence is the table's again: it goes with it.
      const serials = await rows(
        `SELECT pg_get_serial_sequence('public.wide', 'id') AS id,
           pg_get_serial_sequence('public.wide', 'ticket_no') AS ticket`,
      );
      const sequences = Object.values(serials[0]!).map(String);
      for (const name of sequences) assert.match(name, /^public\./);
      ok(await server.request("DELETE", "table/children"));
      ok(await server.request("DELETE", "table/wide"));
      for (const name of sequences) {
        const [gone] = await rows(`SELECT to_regclass('${name}') AS still`);
        assert.equal(gone!.still, null, name);
      }
    } finally {
      await database.close();
      await server.dispose();
    }
  },
);

await postgresTest(
  "PUT retypes on PostgreSQL refuse a value a length or a time of day would change, where PostgreSQL's cast cuts it",
  async (_t, postgres) => {
    const env = await postgresEnv(postgres);
    const server = await TestServer.start(env);
    try {
      // [from, value, to, whether it fits]: PostgreSQL's own cast gives 200 to every one, with
      // "abc", "ab", "123", ["ab"], "10", "0" and "02:00:00" for those that do not fit.
      const cases: [string, Json, string, boolean][] = [
        ["varchar(10)", "abcdefghij", "varchar(3)", false],
        ["varchar(10)", "abc", "varchar(3)", true],
        ["char(5)", "abcde", "char(2)", false],
        ["char(5)", "ab", "char(2)", true],
        ["bigint", 123456789, "varchar(3)", false],
        ["varchar[]", ["abcdef"], "varchar(2)[]", false],
        ["varchar[]", ["ab", null], "varchar(2)[]", true],
        ["bit(4)", "1010", "bit(2)", false],
        ["bit varying", "10101", "bit varying(2)", false],
        ["integer", 2, "bit(1)", false],
        ["integer", 5, "bit(32)", true],
        ["interval", "1 day 02:00:00", "time", false],
        ["interval", "02:00:00", "time", true],
      ];
      for (const [i, [from, value, to, fits]] of cases.entries()) {
        const name = `retyped_${i}`;
        ok(
          await server.request("POST", `table/${name}`, {
            body: { table: { columns: [{ name: "v", type: from }] } },
          }),
        );
        ok(await server.request("POST", `table/${name}/records`, { body: [{ v: value }] }));
        const before = ok(await server.request("GET", `table/${name}/records`)).records;
        const answer = await put(server, name, { columns: [{ id: 1, name: "v", type: to }] });
        const what = `${from} ${JSON.stringify(value)} to ${to}`;
        if (fits) {
          ok(answer);
          continue;
        }
        const error = errorOf(answer, 422);
        assert.match(error.message, /in row 0 cannot be cast to/, what);
        assert.deepEqual(
          ok(await server.request("GET", `table/${name}/records`)).records,
          before,
          what,
        );
      }
    } finally {
      await server.dispose();
    }
  },
);

await postgresTest(
  "a GET answer with a precision before the zone (timestamp(3) without time zone) is taken back by PUT",
  async (_t, postgres) => {
    const env = await postgresEnv(postgres);
    const server = await TestServer.start(env);
    try {
      const types = [
        "timestamp(3)",
        "time(3)",
        "timestamptz(2)",
        "timestamp_s",
        "time(2) with time zone",
      ];
      for (const [i, type] of types.entries()) {
        const name = `stamped_${i}`;
        ok(
          await server.request("POST", `table/${name}`, {
            body: { table: { columns: [{ name: "a", type }, { name: "b", type: "integer" }] } },
          }),
        );
        const got = ok(await server.request("GET", `table/${name}`));
        assert.match(got.table.columns[0].type, /^(timestamp|time)\(\d\) with(out)? time zone$/);
        // Sent back unchanged: a no-op, not 422 "unexpected text at without".
        assert.deepEqual(ok(await put(server, name, got.table)), got);
      }
    } finally {
      await server.dispose();
    }
  },
);
