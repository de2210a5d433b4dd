import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import fc from "npm:fast-check@^4.10.2";
import {
  comparableType,
  type Compatibility,
  TYPE_WIDENINGS,
  type TypedVersion,
  violations,
  widens,
} from "./compatibility.ts";

const TYPES = [
  "TINYINT",
  "SMALLINT",
  "INTEGER",
  "BIGINT",
  "HUGEINT",
  "UTINYINT",
  "UBIGINT",
  "FLOAT",
  "DOUBLE",
  "DECIMAL(10,2)",
  "DECIMAL(12,2)",
  "DECIMAL(18,4)",
  "VARCHAR",
  "VARCHAR(10)",
  "VARCHAR(20)",
  "DATE",
  "TIMESTAMP",
  "TIMESTAMP_S",
  "BOOLEAN",
  "INTEGER[]",
  "BIGINT[]",
];

Deno.test("docs/decisions.md lists exactly the widening table of the code", async () => {
  const decisions = await Deno.readTextFile(new URL("../../docs/decisions.md", import.meta.url));
  const listed = [...decisions.matchAll(/^ {2}\| (.+?) +\| (.+?) +\|$/gm)]
    .map((m) => `${m[1]} | ${m[2]}`)
    .filter((row) => !row.startsWith("from |") && !row.startsWith("---"));
  assert.deepEqual(listed, TYPE_WIDENINGS.map((w) => `${w.from} | ${w.to}`));
});

Deno.test("widening is never both ways, and a type never widens to itself", () => {
  for (const a of TYPES) {
    assert.equal(widens(a, a), false, a);
    for (const b of TYPES) assert.ok(!(widens(a, b) && widens(b, a)), `${a} ⇄ ${b}`);
  }
});

Deno.test("widening is transitive over the listed types", () => {
  for (const a of TYPES) {
    for (const b of TYPES) {
      for (const c of TYPES) {
        if (widens(a, b) && widens(b, c)) assert.ok(widens(a, c), `${a} → ${b} → ${c}`);
      }
    }
  }
});

/** PostgreSQL's canonical names (format_type()) of some of {@link TYPES}, and DuckDB's. */
const POSTGRES_TYPES: Readonly<Record<string, string>> = {
  smallint: "SMALLINT",
  integer: "INTEGER",
  bigint: "BIGINT",
  real: "FLOAT",
  "double precision": "DOUBLE",
  "numeric(10,2)": "DECIMAL(10,2)",
  "numeric(12,2)": "DECIMAL(12,2)",
  "numeric(18,4)": "DECIMAL(18,4)",
  "character varying": "VARCHAR",
  text: "VARCHAR",
  "character varying(10)": "VARCHAR(10)",
  "character varying(20)": "VARCHAR(20)",
  date: "DATE",
  "timestamp without time zone": "TIMESTAMP",
  "timestamp(0) without time zone": "TIMESTAMP_S",
  boolean: "boolean",
  "integer[]": "INTEGER[]",
  "bigint[]": "BIGINT[]",
};

Deno.test("widens() judges PostgreSQL's canonical names as DuckDB's names of the same types", () => {
  for (const [a, duckA] of Object.entries(POSTGRES_TYPES)) {
    for (const [b, duckB] of Object.entries(POSTGRES_TYPES)) {
      assert.equal(widens(a, b), widens(duckA, duckB), `${a} → ${b}`);
    }
  }
  assert.equal(widens("integer", "bigint"), true);
  assert.equal(widens("character varying(20)", "character varying(40)"), true);
  assert.equal(widens("numeric(10,2)", "numeric(12,2)"), true);
  assert.equal(comparableType("text"), comparableType("character varying"));
});

Deno.test("violations() on PostgreSQL's names: text and character varying are no change", () => {
  const typed = (version: string, type: string): TypedVersion => ({
    version,
    keys: [],
    columns: [{ name: "s", type, nullable: true, defaulted: false }],
  });
  assert.deepEqual(
    violations("full", [typed("1.0", "text")], typed("2.0", "character varying")),
    [],
  );
  const narrowed = violations(
    "full",
    [typed("1.0", "text")],
    typed("2.0", "character varying(10)"),
  );
  assert.deepEqual(narrowed.map((v) => `${v.rule} ${v.change}`), ["backward type_narrowed"]);
});

const column = fc.record({
  name: fc.constantFrom("a", "b", "c", "d"),
  type: fc.constantFrom(...TYPES),
  nullable: fc.boolean(),
  defaulted: fc.boolean(),
});
const version = (label: string) =>
  fc.uniqueArray(column, { selector: (c) => c.name, maxLength: 4 }).chain((columns) =>
    fc.subarray(columns.map((c) => c.name)).map((keyed): TypedVersion => ({
      version: label,
      columns,
      keys: keyed.map((name) => ({ text: `unique key (${name})`, columns: [name] })),
    }))
  );
const rules = (found: { rule: string; change: string; column?: string }[]) =>
  found.map((v) => `${v.rule} ${v.change} ${v.column}`).sort();

Deno.test("full finds exactly what backward and forward find; none finds nothing", () => {
  fc.assert(
    fc.property(version("1.0"), version("2.0"), (old, next) => {
      const both = [
        ...violations("backward", [old], next),
        ...violations("forward", [old], next),
      ];
      assert.deepEqual(rules(violations("full", [old], next)), rules(both));
      assert.deepEqual(violations("none", [old], next), []);
      assert.deepEqual(violations("ignore", [old], next), []);
    }),
  );
});

Deno.test("backward and forward mirror each other", () => {
  // What backward refuses from old to next, forward refuses from next to old, and back.
  const mirror: Record<string, string> = {
    column_added: "column_dropped",
    type_narrowed: "type_widened",
    type_changed: "type_changed",
    not_null_added: "not_null_dropped",
    key_added: "key_dropped",
  };
  fc.assert(
    fc.property(version("1.0"), version("2.0"), (old, next) => {
      const backward = violations("backward", [old], next).map((v) =>
        `${mirror[v.change]} ${v.column}`
      );
      const forward = violations("forward", [{ ...next, version: "1.0" }], old).map((v) =>
        `${v.change} ${v.column}`
      );
      assert.deepEqual(backward.sort(), forward.sort());
    }),
  );
});

Deno.test("a transitive mode judges every earlier version, the plain one the latest", () => {
  fc.assert(
    fc.property(
      fc.constantFrom<Compatibility>("backward", "forward", "full"),
      fc.array(version("x"), { minLength: 1, maxLength: 4 }),
      version("9.0"),
      (mode, versions, next) => {
        const earlier = versions.map((v, i) => ({ ...v, version: `1.${i}` }));
        const each = earlier.flatMap((v) => violations(mode, [v], next));
        const transitive = violations(`${mode}_transitive` as Compatibility, earlier, next);
        assert.deepEqual(transitive, each);
        assert.deepEqual(violations(mode, earlier, next), violations(mode, [earlier[0]!], next));
      },
    ),
  );
});
