import assert from "node:assert/strict";
import type { Table } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { openStaging, stagingType } from "./staging.ts";

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
