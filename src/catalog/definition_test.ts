import assert from "node:assert/strict";
import { planTable } from "./definition.ts";

Deno.test("planTable() numbers colliding generated constraint names with the first free number", () => {
  // Column names past the 63-character limit of a constraint name all give the same
  // generated name once it is cut.
  const long = (n: number) => `${"x".repeat(61)}${n}`;
  const columns = [1, 2, 3, 4].map((n) => ({ name: long(n), type: "integer" }));
  const generated = `t_${"x".repeat(61)}`;
  const plan = planTable({ schema: "public", name: "t" }, {
    columns,
    constraints: {
      unique: [
        { columns: [long(1)] },
        { name: `${generated.slice(0, 62)}2`, columns: [long(2)] },
        { columns: [long(3)] },
        { columns: [long(4)] },
      ],
    },
  });
  assert.deepEqual(plan.unique.map((u) => u.name), [
    generated,
    `${generated.slice(0, 62)}2`,
    `${generated.slice(0, 62)}1`,
    `${generated.slice(0, 62)}3`,
  ]);
});

Deno.test("planTable() names 10,000 colliding keys and reports each unknown column", () => {
  const keys = Array.from({ length: 10_000 }, () => ({ columns: ["missing"] }));
  const error = (() => {
    try {
      planTable({ schema: "public", name: "t" }, {
        columns: [{ name: "a", type: "integer" }],
        constraints: { unique: keys },
      });
    } catch (caught) {
      return caught as { details?: unknown[] };
    }
  })();
  assert.ok(error, "must be refused");
  assert.equal(error.details?.length, 100);
});
