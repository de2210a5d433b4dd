import assert from "node:assert/strict";
import type { ApiError } from "../errors.ts";
import type { Table } from "./model.ts";
import { planUpdate, type WantedColumn } from "./update.ts";

/** `pets` as GET answers it: a primary key, a unique key and foreign keys out and to itself. */
const pets: Table = {
  name: "pets",
  schema: "public",
  columns: [
    { id: 1, name: "id", type: "INTEGER", default: null, is_nullable: false },
    { id: 2, name: "tag", type: "VARCHAR", default: null, is_nullable: true },
    { id: 3, name: "owner", type: "INTEGER", default: null, is_nullable: true },
    { id: 4, name: "mother", type: "INTEGER", default: null, is_nullable: true },
  ],
  constraints: {
    primary_key: { name: "pets_pkey", columns: ["id"] },
    unique: [{ name: "pets_tag_key", columns: ["tag"] }],
    foreign_keys: [
      {
        name: "pets_owner_fkey",
        column: "owner",
        reference_table: "owners",
        reference_column: "id",
        reference_schema: "public",
      },
      {
        name: "pets_mother_fkey",
        column: "mother",
        reference_table: "pets",
        reference_column: "id",
        reference_schema: "public",
      },
    ],
  },
};

/** The GET response's columns with some renamed, in update form. */
function renamed(names: Record<string, string>): WantedColumn[] {
  return pets.columns.map((c) => ({ ...c, name: names[c.name] ?? c.name }));
}

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (caught) {
    return caught as ApiError;
  }
  assert.fail("expected a refusal");
}

Deno.test("planUpdate() carries the sent constraints' previous column names to the new ones", () => {
  const { plan } = planUpdate(pets, {
    columns: renamed({ id: "pet_id", tag: "label", owner: "owner_id", mother: "MOTHER_ID" }),
    constraints: pets.constraints,
  });
  assert.deepEqual(plan.primaryKey, { name: "pets_pkey", columns: ["pet_id"] });
  assert.deepEqual(plan.unique, [{ name: "pets_tag_key", columns: ["label"] }]);
  assert.deepEqual(
    plan.foreignKeys.map((fk) => [fk.name, fk.column, fk.reference.name, fk.referenceColumn]),
    [
      ["pets_owner_fkey", "owner_id", "owners", "id"],
      // A self-reference names this table's columns on both sides, so both follow.
      ["pets_mother_fkey", "MOTHER_ID", "pets", "pet_id"],
    ],
  );
});

Deno.test("planUpdate() reads a sent constraint name as a wanted column's name first", () => {
  // "tag" and "owner" swap names: "tag" is the previous name of column 2 and the wanted
  // name of column 3. The wanted name wins, so a request that meant the wanted table
  // keeps its meaning.
  const { plan } = planUpdate(pets, {
    columns: renamed({ tag: "owner", owner: "tag" }),
    constraints: { unique: [{ name: "k", columns: ["tag"] }] },
  });
  assert.deepEqual(plan.unique, [{ name: "k", columns: ["tag"] }]);
  assert.equal(plan.columns.find((c) => c.name === "tag")?.typeText, "INTEGER");
});

Deno.test("planUpdate() does not carry a dropped column's name to anything", () => {
  const error = refusal(() =>
    planUpdate(pets, {
      columns: pets.columns.filter((c) => c.name !== "tag"),
      constraints: { unique: [{ columns: ["tag"] }] },
    })
  );
  assert.equal(error.status, 422);
  assert.match(error.message, /"tag"/);
});

Deno.test("planUpdate() refuses a new column named as a column the update drops", () => {
  for (const name of ["tag", "TAG"]) {
    const error = refusal(() =>
      planUpdate(pets, {
        columns: [
          ...pets.columns.filter((c) => c.name !== "tag"),
          { name, type: "varchar" },
        ],
      })
    );
    assert.equal(error.status, 422);
    assert.match(error.message, new RegExp(`"${name}".*column "tag" \\(id 2\\).*send its id`));
    assert.deepEqual(error.details?.map((d) => d.field), ["columns[3].id"]);
  }
  // Kept under another name, the old name is free for a new column.
  const { sources } = planUpdate(pets, {
    columns: [...renamed({ tag: "label" }), { name: "tag", type: "varchar" }],
  });
  assert.deepEqual(sources, [1, 2, 3, 4, undefined]);
});
