import assert from "node:assert/strict";
import type { Table } from "../../catalog/model.ts";
import { orderBy } from "../shared/record_terms.ts";
import { afterCondition, BoundValues, sortKeys, surelyConverts } from "../shared/record_filters.ts";
import { recordsSelect } from "../shared/record_reads.ts";
import { POSTGRES } from "./record_filters.ts";

const TABLE: Table = {
  name: "t",
  schema: "s",
  columns: [
    { id: 1, name: "id", type: "integer", default: null, is_nullable: false },
    { id: 2, name: "name", type: "text", default: null, is_nullable: true },
  ],
  constraints: { primary_key: { name: "pk", columns: ["id"] }, unique: [], foreign_keys: [] },
};

Deno.test("sortKeys() on PostgreSQL ends in the primary key", () => {
  const keys = sortKeys(POSTGRES, TABLE, [{ column: "name", direction: "desc" }]);
  assert.equal(orderBy(keys), '"name" DESC NULLS FIRST, "id" ASC NULLS LAST');
});

Deno.test("surelyConverts() on PostgreSQL passes integers within their type's range", () => {
  assert.equal(surelyConverts(POSTGRES, { type: "smallint", text: "-32768", what: "" }), true);
  assert.equal(surelyConverts(POSTGRES, { type: "smallint", text: "32768", what: "" }), false);
});

Deno.test("afterCondition() on PostgreSQL binds a cursor's key texts cast to their types", () => {
  const params: unknown[] = [];
  const keys = [{ sql: '"id"', type: "bigint", direction: "asc" as const, nulls: "last" as const }];
  assert.equal(
    afterCondition(POSTGRES, keys, ["41"], new BoundValues(params)),
    '"id" > $1::bigint',
  );
  assert.deepEqual(params, ["41"]);
});

Deno.test("recordsSelect() on PostgreSQL lists the selected columns, filtered and ordered", () => {
  const bound = new BoundValues();
  const { sql } = recordsSelect(POSTGRES, TABLE, {
    select: ["name"],
    filters: [{ column: "id", op: "gt", negated: false, value: "2" }],
    order: [{ column: "name", direction: "desc" }],
    count: "exact",
  }, bound);
  assert.equal(
    sql,
    'SELECT "name" FROM "s"."t" WHERE ("id" > $1::integer) ORDER BY "name" DESC NULLS FIRST, "id" ASC NULLS LAST',
  );
  assert.deepEqual(bound.values, ["2"]);
});
