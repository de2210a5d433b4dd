import assert from "node:assert/strict";
import type { Table } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { openStaging, READ_AS_MOST, stagingType } from "./staging.ts";

const table: Table = {
  name: "t",
  schema: "public",
  columns: [
    { id: 1, name: "id", type: "integer", default: null, is_nullable: false },
    { id: 2, name: "s", type: "text", default: null, is_nullable: true },
    { id: 3, name: "raw", type: "bytea", default: null, is_nullable: true },
    { id: 4, name: "tags", type: "character varying[]", default: null, is_nullable: true },
    { id: 5, name: "n", type: "numeric", default: null, is_nullable: true },
  ],
  constraints: { primary_key: { name: "t_pkey", columns: ["id"] }, unique: [], foreign_keys: [] },
};

function rows(text: string) {
  return {
    stream: () => new Blob([text]).stream(),
    rows: text.trim().split("\n").length,
    form: "objects" as const,
    keys: ["id", "s", "raw", "tags", "n"],
    keysComplete: true,
    firstRowOfLength: new Map(),
    hasData: true,
  };
}

Deno.test("stagingType() reads what DuckDB holds less of than PostgreSQL as text", () => {
  assert.equal(stagingType("numeric(10,2)"), "DECIMAL(10,2)");
  assert.equal(stagingType("numeric(50,2)"), "VARCHAR");
  assert.equal(stagingType("numeric"), "VARCHAR");
  assert.equal(stagingType("timestamp(3) without time zone"), "timestamp without time zone");
  assert.equal(stagingType("jsonb"), "JSON");
  assert.equal(stagingType("character(3)[]"), "VARCHAR[]");
  assert.equal(stagingType("bigint[]"), "bigint[]");
});

Deno.test("openStaging() writes PostgreSQL's CSV and row errors with the target's type names", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const staging = await openStaging({ spoolDir: dir, tempDir: dir });
  try {
    const good =
      '{"id":1,"s":"a \\"q\\", b\\nc","raw":"AAE=","tags":["x,y",null,"\\\\"],"n":1.5}\n' +
      '{"id":2,"s":"","raw":null,"tags":[],"n":null}\n';
    const staged = await staging.withRows(rows(good), (held) => held.stage(table, "fail"));
    assert.deepEqual(staged.columns, ["id", "s", "raw", "tags", "n"]);
    assert.equal(staged.rows, 2);
    assert.equal(
      await Deno.readTextFile(staged.path),
      '"1","a ""q"", b\nc","\\x0001","{""x,y"",NULL,""\\\\""}","1.5"\n"2","",,"{}",\n',
    );
    await Deno.remove(staged.path);
    const bad = '{"id":"x"}\n{"id":1}\n{"id":1}\n';
    await assert.rejects(
      staging.withRows(rows(bad), (held) => held.stage(table, "fail")),
      (error) =>
        error instanceof ApiError && error.status === 422 &&
        error.details?.[0]?.message === 'Value "x" is not a valid integer',
    );
  } finally {
    await staging.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openStaging() stages a table whose types overfill the kept type names", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const staging = await openStaging({ spoolDir: dir, tempDir: dir });
  const column = (name: string, type: string) => ({
    id: 1,
    name,
    type,
    default: null,
    is_nullable: true,
  });
  const keyless = { primary_key: null, unique: [], foreign_keys: [] };
  // Almost as many types as are kept, then a table of one kept type and ten new ones: the
  // kept names are dropped while the new are asked, and the kept one must still be known.
  const wide: Table = {
    name: "w",
    schema: "public",
    columns: Array.from(
      { length: READ_AS_MOST - 5 },
      (_, i) => column(`c${i}`, `character varying(${i + 1})`),
    ),
    constraints: keyless,
  };
  const mixed: Table = {
    name: "m",
    schema: "public",
    columns: [
      column("c0", "character varying(1)"),
      ...Array.from({ length: 10 }, (_, i) => column(`n${i}`, `numeric(${i + 5},2)`)),
    ],
    constraints: keyless,
  };
  try {
    for (const target of [wide, mixed]) {
      const body = { ...rows('{"c0":"a"}\n'), keys: ["c0"] };
      const staged = await staging.withRows(body, (held) => held.stage(target, "fail"));
      assert.equal(await Deno.readTextFile(staged.path), '"a"\n', target.name);
      await Deno.remove(staged.path);
    }
  } finally {
    await staging.close();
    await Deno.remove(dir, { recursive: true });
  }
});
