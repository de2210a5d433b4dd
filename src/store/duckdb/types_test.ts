import assert from "node:assert/strict";
import { holds, mapScalars, parseType, typeName } from "./types.ts";

Deno.test("parseType() takes nested types apart and typeName() puts them back", () => {
  for (
    const type of [
      "INTEGER",
      "DECIMAL(38,10)",
      "TIMESTAMP WITH TIME ZONE",
      "BIGINT[]",
      "HUGEINT[2][]",
      'STRUCT("a" INTEGER, "b c" VARCHAR[])',
      'STRUCT("say ""hi"", (x) [y]" BLOB, "m" MAP(VARCHAR, STRUCT("d" DECIMAL(10,2))[]))[3]',
      "MAP(BIGINT, DOUBLE)",
      "UNION(n INTEGER, s VARCHAR)",
      "ENUM('a, b', 'c''d')",
    ]
  ) {
    assert.equal(typeName(parseType(type)), type);
  }
  // DuckDB leaves plain field names unquoted; they come back quoted, which DuckDB takes alike.
  assert.equal(
    typeName(parseType("STRUCT(a INTEGER, b MAP(VARCHAR, BLOB))")),
    'STRUCT("a" INTEGER, "b" MAP(VARCHAR, BLOB))',
  );
  assert.deepEqual(parseType("HUGEINT[2][]"), {
    kind: "list",
    element: { kind: "list", element: { kind: "scalar", name: "HUGEINT" }, size: "2" },
  });
  // A type it does not take apart stays whole, as does one it cannot read.
  assert.deepEqual(parseType("STRUCT(a)"), { kind: "scalar", name: "STRUCT(a)" });
  assert.deepEqual(parseType("UNION(n INTEGER, s VARCHAR)"), {
    kind: "scalar",
    name: "UNION(n INTEGER, s VARCHAR)",
  });
});

Deno.test("holds() and mapScalars() reach every scalar of a nested type", () => {
  const type = parseType('STRUCT(a INTEGER, "b" MAP(VARCHAR, BLOB[]))[]');
  assert.ok(holds(type, (t) => t === "BLOB"));
  assert.ok(!holds(type, (t) => t === "DOUBLE"));
  assert.equal(
    typeName(mapScalars(type, (t) => t === "BLOB" ? "VARCHAR" : t)),
    'STRUCT("a" INTEGER, "b" MAP(VARCHAR, VARCHAR[]))[]',
  );
});
