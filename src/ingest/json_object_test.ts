import assert from "node:assert/strict";
import { objectMembers } from "./json_object.ts";

Deno.test("objectMembers() keeps each value's own text, nested and escaped", () => {
  const text =
    ' {\n "a\\"b" : "x,\\"}" ,"n":-1.50e3, "o": {"k": [1, {"z": null}]},"\\u0041": true}\t';
  assert.deepEqual(objectMembers(text), [
    { key: 'a"b', json: '"x,\\"}"' },
    { key: "n", json: "-1.50e3" },
    { key: "o", json: '{"k": [1, {"z": null}]}' },
    { key: "A", json: "true" },
  ]);
});

Deno.test("objectMembers() gives no member for an empty object", () => {
  assert.deepEqual(objectMembers("{ }"), []);
});

Deno.test("objectMembers() refuses what is not one JSON object, as 400", () => {
  for (const text of ["", "{", '{"a":}', "[]", "null", "3", '"x"']) {
    assert.throws(
      () => objectMembers(text),
      (e: { status?: number }) => e.status === 400,
      JSON.stringify(text),
    );
  }
});

Deno.test("objectMembers() refuses a key given twice, also when spelled with escapes", () => {
  assert.throws(() => objectMembers('{"a": 1, "\\u0061": 2}'), /"a" more than once/);
});

Deno.test("objectMembers() refuses nesting deeper than 512 levels", () => {
  const deep = (n: number) => `{"a":${"[".repeat(n - 1)}${"]".repeat(n - 1)}}`;
  assert.equal(objectMembers(deep(512)).length, 1);
  assert.throws(() => objectMembers(deep(513)), /deeper than 512/);
});
