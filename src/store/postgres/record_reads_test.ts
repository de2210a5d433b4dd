import assert from "node:assert/strict";
import { parseReadQuery } from "../../catalog/filters.ts";
import { planTable } from "../../catalog/definition.ts";
import type { TableDefinition } from "../../catalog/model.ts";
import { rejectsWith } from "../../../tests/helpers/api_error.ts";
import { postgresTest } from "../../../tests/helpers/postgres.ts";
import { withPostgresStore } from "../../../tests/helpers/postgres_store.ts";
import { plannedInOne } from "./record_reads.ts";

const TYPES: TableDefinition = {
  columns: [
    { name: "id", type: "integer", is_nullable: false },
    { name: "small", type: "smallint" },
    { name: "big", type: "bigint" },
    { name: "real", type: "real" },
    { name: "double", type: "double" },
    { name: "exact", type: "decimal(10,2)" },
    { name: "any", type: "numeric" },
    { name: "text", type: "varchar" },
    { name: "flag", type: "boolean" },
    { name: "day", type: "date" },
    { name: "at", type: "timestamp" },
    { name: "zoned", type: "timestamptz" },
    { name: "clock", type: "time" },
    { name: "bytes", type: "blob" },
    { name: "doc", type: "json" },
    { name: "docb", type: "jsonb" },
    { name: "uid", type: "uuid" },
    { name: "ints", type: "integer[]" },
    { name: "bigs", type: "bigint[]" },
    { name: "days", type: "date[]" },
    { name: "span", type: "interval" },
  ],
  constraints: { primary_key: { columns: ["id"] } },
};

await postgresTest(`readRecords() on PostgreSQL`, async (t, server) => {
  await t.step("renders each type as the DuckDB store does", async () => {
    await withPostgresStore(server, async (store, database) => {
      await store.tables.create(planTable({ schema: "public", name: "types" }, TYPES), {
        ifNotExists: false,
      });
      await database.withSession((s) =>
        s.run(
          `INSERT INTO types VALUES (1, -3, 9007199254740993, 0.1, 1.5, 12.50, 1.000000000000000000001,
                'Zoë "q"', true, '1815-12-10', '2024-01-02 03:04:05.5', '2024-01-02 03:04:05+02',
                '10:00:00.5', '\\x00ff', '{"a": [1, 2]}', '{"b": 1, "a": 2}',
                'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{1,NULL,3}', '{9007199254740993,1}',
                '{2024-01-01,0002-01-01 BC}', '1 day 02:00:00'),
               (2, NULL, -5, 'NaN', '-Infinity', NULL, NULL, NULL, false, '0001-01-01 BC',
                'infinity', NULL, NULL, NULL, NULL, 'null', NULL, '{}', NULL, NULL, NULL)`,
        )
      );
      const page = await store.records.read({ schema: "public", name: "types" }, 0, 10);
      assert.equal(page.total, 2);
      assert.equal(
        page.json,
        "[" +
          '{"id":1,"small":-3,"big":"9007199254740993","real":0.1,"double":1.5,"exact":12.50,' +
          '"any":1.000000000000000000001,"text":"Zoë \\"q\\"","flag":true,"day":"1815-12-10",' +
          '"at":"2024-01-02T03:04:05.500000","zoned":"2024-01-02T01:04:05.000000Z",' +
          '"clock":"10:00:00.5","bytes":"AP8=","doc":{"a": [1, 2]},"docb":{"a": 2, "b": 1},' +
          '"uid":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11","ints":[1,null,3],' +
          '"bigs":["9007199254740993",1],"days":["2024-01-01","-0001-01-01"],' +
          '"span":"1 day 02:00:00"},' +
          '{"id":2,"small":null,"big":-5,"real":"nan","double":"-inf","exact":null,"any":null,' +
          '"text":null,"flag":false,"day":"0000-01-01","at":"infinity","zoned":null,' +
          '"clock":null,"bytes":null,"doc":null,"docb":null,"uid":null,"ints":[],' +
          '"bigs":null,"days":null,"span":null}' +
          "]",
      );
      const parsed = JSON.parse(page.json);
      assert.equal(parsed.length, 2);
    });
  });

  await t.step("a page whose values need no check goes in one round trip", async () => {
    await withPostgresStore(server, async (store, database) => {
      const ref = { schema: "public", name: "one_trip" };
      const { table } = await store.tables.create(
        planTable(ref, {
          columns: [
            { name: "id", type: "bigint" },
            { name: "name", type: "varchar" },
            { name: "born", type: "date" },
          ],
          constraints: { primary_key: { columns: ["id"] } },
        }),
        { ifNotExists: false },
      );
      const inOne = (query: string, after?: string) =>
        plannedInOne(table, 0, {
          read: parseReadQuery(new URLSearchParams(query), table.columns),
          ...(after === undefined ? {} : { after }),
        }) !== undefined;
      assert.equal(inOne(""), true);
      assert.equal(inOne("id=gte.77&count=none"), true);
      assert.equal(inOne("name=eq.Ada&id=in.(1,-2)"), true);
      await database.withSession((s) =>
        s.run(`INSERT INTO one_trip VALUES (1, 'a', NULL), (2, 'b', NULL)`)
      );
      const { next } = await store.records.read(ref, 0, 1, {
        read: parseReadQuery([["count", "none"]], table.columns),
        after: "",
      });
      assert.ok(next);
      assert.equal(inOne("count=none", next), true);
      // The engine says whether these convert, in a statement before the page.
      assert.equal(inOne("born=lt.1910-01-01"), false);
      assert.equal(inOne("id=gte.1e3"), false);
      assert.equal(inOne("id=gte.99999999999999999999"), false);
      assert.equal(inOne("count=estimated"), false);
      // Fails to plan, or to choose by a description that may be stale: the long way says why.
      assert.equal(inOne("count=none", "not a cursor"), false);
      const choice = (t: typeof table) => ({
        read: parseReadQuery([["select", "label"]], t.columns),
      });
      assert.equal(plannedInOne(table, 0, choice), undefined);
    });
  });

  await t.step("filters, select, order, count and cursors", async () => {
    await withPostgresStore(server, async (store, database) => {
      const ref = { schema: "public", name: "people" };
      const definition: TableDefinition = {
        columns: [
          { name: "name", type: "varchar" },
          { name: "age", type: "smallint" },
          { name: "born", type: "date" },
        ],
      };
      const table = (await store.tables.create(planTable(ref, definition), {
        ifNotExists: false,
      })).table;
      // Inserted out of name order: no key, so records come in insertion order.
      await database.withSession((s) =>
        s.run(
          `INSERT INTO people (name, age, born) VALUES ('Grace', 85, '1906-12-09'),
               ('Ada', 36, '1815-12-10'), (NULL, NULL, NULL), ('alan', 41, '1912-06-23'),
               ('Edsger', 72, '1930-05-11'), ('x', 36, NULL)`,
        )
      );
      const read = async (query: string, offset = 0, limit = 100, after?: string) => {
        const parsed = parseReadQuery(new URLSearchParams(query), table.columns);
        const page = await store.records.read(ref, offset, limit, {
          read: parsed,
          ...(after === undefined ? {} : { after }),
        });
        return { ...page, rows: JSON.parse(page.json) as Record<string, unknown>[] };
      };
      const names = async (query: string) => (await read(query)).rows.map((r) => r.name);
      assert.deepEqual(await names(""), ["Grace", "Ada", null, "alan", "Edsger", "x"]);
      assert.deepEqual(await names("age=eq.36"), ["Ada", "x"]);
      assert.deepEqual(await names("age=not.eq.36"), ["Grace", "alan", "Edsger"]);
      assert.deepEqual(await names("age=in.(36,85)"), ["Grace", "Ada", "x"]);
      assert.deepEqual(await names("age=not.in.(36,85)"), ["alan", "Edsger"]);
      assert.deepEqual(await names("age=in.()"), []);
      assert.deepEqual(await names("name=like.A*"), ["Ada"]);
      assert.deepEqual(await names("name=ilike.a*"), ["Ada", "alan"]);
      assert.deepEqual(await names("name=is.null"), [null]);
      assert.deepEqual(await names("born=lt.1910-01-01&age=gt.40"), ["Grace"]);
      assert.deepEqual(await names("order=age.desc.nullslast&limit=2"), [
        "Grace",
        "Edsger",
        "alan",
        "Ada",
        "x",
        null,
      ]);
      assert.deepEqual(await names("order=age.asc.nullsfirst"), [
        null,
        "Ada",
        "x",
        "alan",
        "Edsger",
        "Grace",
      ]);
      const selected = await read("select=age,name&age=gte.72&count=none");
      assert.equal(selected.json, '[{"age":85,"name":"Grace"},{"age":72,"name":"Edsger"}]');
      assert.equal(selected.total, undefined);
      assert.equal((await read("age=eq.36", 1, 1)).total, 2);
      assert.deepEqual((await read("age=eq.36", 1, 1)).rows, [{
        name: "x",
        age: 36,
        born: null,
      }]);

      // A walk by cursor gives the rows of the whole read, in order, in pages.
      for (const query of ["", "order=age", "order=age.desc,name", "order=born.nullsfirst"]) {
        const whole = (await read(query)).rows;
        const walked: unknown[] = [];
        let after: string | null = "";
        while (after !== null) {
          const page: { rows: unknown[]; next?: string | null } = await read(
            query,
            0,
            2,
            after,
          );
          walked.push(...page.rows);
          after = page.next ?? null;
        }
        assert.deepEqual(walked, whole, query);
      }
      const empty = await read("age=eq.1", 0, 5, "");
      assert.deepEqual([empty.json, empty.total, empty.next], ["[]", 0, null]);
      const zero = await read("", 0, 0, "");
      assert.deepEqual([zero.json, zero.next], ["[]", ""]);

      for (
        const [query, column] of [
          ["age=eq.old", "age"],
          ["age=in.(1,x)", "age"],
          ["age=gt.100000", "age"],
          ["born=eq.1815-13-45", "born"],
          ["age=is.true", "age"],
        ]
      ) {
        await rejectsWith(read(query!), 400, new RegExp(`"${column}"`));
      }
      const { next } = await read("order=age", 0, 2, "");
      await rejectsWith(read("order=age.desc", 0, 2, next!), 400, /another order/);
      await rejectsWith(read("", 0, 2, "not-a-cursor"), 400, /after/);
      await rejectsWith(
        store.records.read({ schema: "public", name: "nobody" }, 0, 1),
        404,
        /nobody/,
      );
    });
  });
});
