import assert from "node:assert/strict";
import { ENGINE } from "./helpers/engine.ts";
import { errorOf, ok, TestServer } from "./helpers/server.ts";

// The store keeps table descriptions between requests: these tests read a definition, change
// it in every way the API can, and read it again, so a description kept past a change shows.

type Json = ReturnType<typeof ok>;

/** The canonical names of the types used here, on the engine of this run. */
const T = ENGINE === "duckdb"
  ? { INTEGER: "INTEGER", VARCHAR: "VARCHAR", BOOLEAN: "BOOLEAN", DATE: "DATE" }
  : { INTEGER: "integer", VARCHAR: "character varying", BOOLEAN: "boolean", DATE: "date" };

async function definitionOf(server: TestServer, path: string): Promise<Json> {
  return ok(await server.request("GET", path)).table;
}

/** `columns` as [name, type] pairs, what each change below alters. */
function shape(table: Json): string[][] {
  return table.columns.map((c: Json) => [c.name, c.type]);
}

Deno.test("a GET right after each kind of change shows the new definition", async (t) => {
  const server = await TestServer.start();
  try {
    const columns = [{ name: "id", type: "integer" }, { name: "n", type: "integer" }];
    ok(await server.request("POST", "table/t", { body: { table: { columns } } }));
    assert.deepEqual(shape(await definitionOf(server, "table/t")), [
      ["id", T.INTEGER],
      ["n", T.INTEGER],
    ]);

    await t.step("a PUT that renames and retypes a column", async () => {
      await definitionOf(server, "table/T");
      const [id, n] = (await definitionOf(server, "table/t")).columns;
      ok(
        await server.request("PUT", "table/t", {
          body: { table: { columns: [id, { id: n.id, name: "m", type: "varchar" }] } },
        }),
      );
      const expected = [["id", T.INTEGER], ["m", T.VARCHAR]];
      assert.deepEqual(shape(await definitionOf(server, "table/t")), expected);
      // Another spelling of the same name finds the same, new definition.
      assert.deepEqual(shape(await definitionOf(server, "table/T")), expected);
    });

    await t.step("a PUT that renames the table", async () => {
      ok(await server.request("PUT", "table/t", { body: { table: { name: "u" } } }));
      errorOf(await server.request("GET", "table/t"), 404);
      assert.equal((await definitionOf(server, "table/u")).name, "u");
      ok(await server.request("PUT", "table/u", { body: { table: { name: "t" } } }));
      errorOf(await server.request("GET", "table/u"), 404);
      assert.equal((await definitionOf(server, "table/t")).name, "t");
    });

    await t.step("a drop and a re-creation with another definition", async () => {
      await definitionOf(server, "table/t");
      ok(await server.request("DELETE", "table/t"));
      errorOf(await server.request("GET", "table/t"), 404);
      const other = [{ name: "key", type: "varchar" }];
      ok(await server.request("POST", "table/t", { body: { table: { columns: other } } }));
      assert.deepEqual(shape(await definitionOf(server, "table/t")), [["key", T.VARCHAR]]);
    });

    await t.step("an upload that replaces the table", async () => {
      await definitionOf(server, "table/t");
      ok(
        await server.request("POST", "table/t/upload/json?if_exists=replace", {
          body: { table: { columns: [{ name: "flag", type: "boolean" }] }, data: [[true]] },
        }),
      );
      assert.deepEqual(shape(await definitionOf(server, "table/t")), [["flag", T.BOOLEAN]]);
    });

    await t.step("a change to a referenced table, seen in the referencing one", async () => {
      const id = { name: "id", type: "integer" };
      ok(
        await server.request("POST", "table/parent", {
          body: { table: { columns: [id], constraints: { primary_key: { columns: ["id"] } } } },
        }),
      );
      const fk = { column: "parent", reference_table: "parent", reference_column: "id" };
      ok(
        await server.request("POST", "table/child", {
          body: {
            table: {
              columns: [{ name: "parent", type: "integer" }],
              constraints: { foreign_keys: [fk] },
            },
          },
        }),
      );
      const before = (await definitionOf(server, "table/child")).constraints.foreign_keys[0];
      assert.equal(before.reference_table, "parent");
      const [parentId] = (await definitionOf(server, "table/parent")).columns;
      ok(
        await server.request("PUT", "table/parent", {
          body: { table: { name: "mother", columns: [{ ...parentId, name: "key" }] } },
        }),
      );
      const after = (await definitionOf(server, "table/child")).constraints.foreign_keys[0];
      assert.deepEqual([after.reference_table, after.reference_column], ["mother", "key"]);
    });

    await t.step("a schema dropped with its tables, and made again", async () => {
      ok(await server.request("POST", "schema/s"));
      const first = [{ name: "a", type: "integer" }];
      ok(await server.request("POST", "table/x?schema=s", { body: { table: { columns: first } } }));
      assert.deepEqual(shape(await definitionOf(server, "table/x?schema=s")), [["a", T.INTEGER]]);
      ok(await server.request("DELETE", "schema/s?cascade=true"));
      errorOf(await server.request("GET", "table/x?schema=s"), 404);
      ok(await server.request("POST", "schema/s"));
      const second = [{ name: "b", type: "date" }];
      ok(
        await server.request("POST", "table/x?schema=s", { body: { table: { columns: second } } }),
      );
      assert.deepEqual(shape(await definitionOf(server, "table/x?schema=s")), [["b", T.DATE]]);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("GETs racing PUTs see the old or the new definition, and the new one once the PUT answered", async () => {
  const server = await TestServer.start();
  try {
    const columns = [{ name: "id", type: "integer" }, { name: "v0", type: "integer" }];
    ok(await server.request("POST", "table/t", { body: { table: { columns } } }));
    const [id, v] = (await definitionOf(server, "table/t")).columns;
    /** The definition names its second column after the PUT that gave it: v0, v1, … */
    const version = (table: Json) => Number(table.columns[1].name.slice(1));
    let written = 0;
    let racing = true;
    const problems: string[] = [];
    let reads = 0;
    const read = async () => {
      while (racing) {
        // What had answered before the GET was sent: the GET may show it or a later one, up to
        // the PUT under way when it answered (on a slow machine, further PUTs may have
        // answered while it waited).
        const floor = written;
        const seen = version(await definitionOf(server, "table/t"));
        const ceiling = written + 1;
        reads++;
        if (seen < floor || seen > ceiling) {
          problems.push(`version ${seen} after ${floor}, before ${ceiling} answered`);
        }
      }
    };
    const readers = Array.from({ length: 4 }, read);
    try {
      for (let i = 1; i <= 15; i++) {
        const type = i % 2 === 0 ? "integer" : "varchar";
        ok(
          await server.request("PUT", "table/t", {
            body: { table: { columns: [id, { id: v.id, name: `v${i}`, type }] } },
          }),
        );
        written = i;
        assert.equal(version(await definitionOf(server, "table/t")), i);
      }
    } finally {
      racing = false;
      await Promise.all(readers);
    }
    assert.equal(problems.length, 0, problems.slice(0, 5).join("\n"));
    assert.ok(reads > 15, `only ${reads} reads raced the PUTs`);
  } finally {
    await server.dispose();
  }
});
