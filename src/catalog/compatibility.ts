/**
 * Compatibility between versions of a table template, per the contract's rules:
 *
 * - **backward** (consumers of the new version read rows written under the old): a column may
 *   be added only if it is nullable or has a default; columns may be dropped; types may widen;
 *   NOT NULL may be relaxed; keys may be dropped. Nothing else.
 * - **forward** (consumers of the old version read rows written under the new): columns may
 *   be added; a column may be dropped only if it was nullable or had a default; types may
 *   narrow; NOT NULL may be tightened; keys may be added.
 * - **full**: both. A rename is a drop plus an add; columns match by name, case-insensitively.
 *
 * Keys (primary key, unique, foreign keys) are judged like NOT NULL: a key is a promise about
 * every row, so adding one is a tightening and dropping one a relaxation. A key over a column
 * only one of the versions has is judged through that column's own rule instead. Defaults and
 * constraint names do not change how rows are read and are never a violation.
 *
 * Which type changes widen is one explicit table, {@link TYPE_WIDENINGS}; narrowing is
 * widening read the other way. The table is on DuckDB's canonical type names; PostgreSQL's
 * canonical names of the same types (`integer`, `character varying(20)`, `numeric(10,2)`, …)
 * are read as those first ({@link comparableType}), so the rules are the same on both engines.
 *
 * @module
 */

import type { ErrorDetail } from "../errors.ts";
import { nameKey } from "./names.ts";

/** The compatibility modes, as stored (lowercase). `ignore` is another name for `none`. */
export const COMPATIBILITY_MODES = [
  "none",
  "ignore",
  "backward",
  "backward_transitive",
  "forward",
  "forward_transitive",
  "full",
  "full_transitive",
] as const;

/** A compatibility mode. */
export type Compatibility = typeof COMPATIBILITY_MODES[number];

/** The direction a violation breaks. */
export type Rule = "backward" | "forward";

/** A column as compatibility sees it. */
export interface TypedColumn {
  readonly name: string;
  /**
   * The engine's canonical type name (DuckDB's or PostgreSQL's); VARCHAR keeps a declared
   * length, as in `VARCHAR(20)`.
   */
  readonly type: string;
  readonly nullable: boolean;
  /** Has a default, or draws from a sequence. */
  readonly defaulted: boolean;
}

/** One version of a template as compatibility sees it. */
export interface TypedVersion {
  readonly version: string;
  readonly columns: readonly TypedColumn[];
  readonly keys: readonly TypedKey[];
}

/** A key constraint as compatibility sees it. */
export interface TypedKey {
  /** Its kind and columns as text, e.g. `primary key (id)`; equal text, equal key. */
  readonly text: string;
  readonly columns: readonly string[];
}

/** What changed between two versions. */
export type Change =
  | "column_added"
  | "column_dropped"
  | "type_widened"
  | "type_narrowed"
  | "type_changed"
  | "not_null_added"
  | "not_null_dropped"
  | "key_added"
  | "key_dropped";

/** One violation: which earlier version, what changed where, which rule it breaks. */
export interface Violation extends ErrorDetail {
  readonly version: string;
  readonly column?: string;
  readonly key?: string;
  readonly change: Change;
  readonly rule: Rule;
}

/** One row of {@link TYPE_WIDENINGS}: which types widen to which, and the test. */
export interface Widening {
  /** The narrower type, as docs/decisions.md lists it. */
  readonly from: string;
  /** What it widens to, as docs/decisions.md lists it. */
  readonly to: string;
  /** Whether canonical type `from` widens to canonical type `to` by this row. */
  readonly applies: (from: string, to: string) => boolean;
}

const exactly = (from: string, to: readonly string[]): Widening => ({
  from,
  to: to.join(", "),
  applies: (a, b) => a === from && to.includes(b),
});
const DECIMAL = /^DECIMAL\((\d+),\s*(\d+)\)$/;
const VARCHAR_N = /^VARCHAR\((\d+)\)$/;
const LIST = /^(.*)\[\]$/;
/** Decimal digits every value of an integer type fits in, for widening to DECIMAL. */
const INTEGER_DIGITS: Readonly<Record<string, number>> = {
  TINYINT: 3,
  SMALLINT: 5,
  INTEGER: 10,
  BIGINT: 19,
  HUGEINT: 39,
  UTINYINT: 3,
  USMALLINT: 5,
  UINTEGER: 10,
  UBIGINT: 20,
  UHUGEINT: 39,
};

/** PostgreSQL's canonical names (`format_type()`) of types the widening table lists. */
const POSTGRES_NAMES: Readonly<Record<string, string>> = {
  smallint: "SMALLINT",
  integer: "INTEGER",
  bigint: "BIGINT",
  real: "FLOAT",
  "double precision": "DOUBLE",
  text: "VARCHAR",
  "character varying": "VARCHAR",
  date: "DATE",
  "timestamp(0) without time zone": "TIMESTAMP_S",
  "timestamp(3) without time zone": "TIMESTAMP_MS",
  "timestamp without time zone": "TIMESTAMP",
  "timestamp(6) without time zone": "TIMESTAMP",
};
const POSTGRES_VARCHAR_N = /^character varying\((\d+)\)$/;
const POSTGRES_NUMERIC = /^numeric\((\d+),(\d+)\)$/;

/**
 * A canonical type name as the widening table reads it: DuckDB's names as they are,
 * PostgreSQL's canonical names of the same types as DuckDB's (`integer` → `INTEGER`,
 * `character varying(20)` → `VARCHAR(20)`, `text` → `VARCHAR`, `numeric(10,2)` →
 * `DECIMAL(10,2)`, `integer[]` → `INTEGER[]`), any other name as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { comparableType } from "./compatibility.ts";
 *
 * assert.equal(comparableType("character varying(20)"), "VARCHAR(20)");
 * assert.equal(comparableType("numeric(10,2)[]"), "DECIMAL(10,2)[]");
 * assert.equal(comparableType("INTEGER"), "INTEGER");
 * ```
 */
export function comparableType(type: string): string {
  const list = LIST.exec(type);
  if (list) return `${comparableType(list[1]!)}[]`;
  const named = POSTGRES_NAMES[type];
  if (named !== undefined) return named;
  const varchar = POSTGRES_VARCHAR_N.exec(type);
  if (varchar) return `VARCHAR(${varchar[1]})`;
  const numeric = POSTGRES_NUMERIC.exec(type);
  if (numeric) return `DECIMAL(${numeric[1]},${numeric[2]})`;
  return type;
}

/**
 * The one table of type widenings: conversions DuckDB performs without loss, on its
 * canonical type names (VARCHAR keeping a declared length). Narrowing is this table read
 * from right to left; any other change of type is neither.
 */
export const TYPE_WIDENINGS: readonly Widening[] = [
  exactly("TINYINT", ["SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE"]),
  exactly("SMALLINT", ["INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE"]),
  exactly("INTEGER", ["BIGINT", "HUGEINT", "DOUBLE"]),
  exactly("BIGINT", ["HUGEINT"]),
  exactly("UTINYINT", [
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "FLOAT",
    "DOUBLE",
  ]),
  exactly("USMALLINT", [
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "FLOAT",
    "DOUBLE",
  ]),
  exactly("UINTEGER", ["UBIGINT", "UHUGEINT", "BIGINT", "HUGEINT", "DOUBLE"]),
  exactly("UBIGINT", ["UHUGEINT", "HUGEINT"]),
  exactly("FLOAT", ["DOUBLE"]),
  exactly("DATE", ["TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP"]),
  exactly("TIMESTAMP_S", ["TIMESTAMP_MS", "TIMESTAMP"]),
  exactly("TIMESTAMP_MS", ["TIMESTAMP"]),
  {
    from: "VARCHAR(n)",
    to: "VARCHAR, VARCHAR(m) with m > n",
    applies: (a, b) => {
      const n = VARCHAR_N.exec(a)?.[1];
      const m = VARCHAR_N.exec(b)?.[1];
      return n !== undefined && (b === "VARCHAR" || (m !== undefined && Number(m) > Number(n)));
    },
  },
  {
    from: "DECIMAL(p,s)",
    to: "DECIMAL(p′,s′) with s′ ≥ s and p′−s′ ≥ p−s",
    applies: (a, b) => {
      const [p, s] = (DECIMAL.exec(a) ?? []).slice(1).map(Number);
      const [q, t] = (DECIMAL.exec(b) ?? []).slice(1).map(Number);
      return p !== undefined && q !== undefined && t! >= s! && q - t! >= p - s!;
    },
  },
  {
    from: "an integer type of d digits (TINYINT 3, SMALLINT 5, INTEGER 10, BIGINT 19, …)",
    to: "DECIMAL(p,s) with p−s ≥ d",
    applies: (a, b) => {
      const [p, s] = (DECIMAL.exec(b) ?? []).slice(1).map(Number);
      const digits = INTEGER_DIGITS[a];
      return digits !== undefined && p !== undefined && p - s! >= digits;
    },
  },
  {
    from: "T[]",
    to: "U[] when T widens to U",
    applies: (a, b) => {
      const [t, u] = [LIST.exec(a)?.[1], LIST.exec(b)?.[1]];
      return t !== undefined && u !== undefined && widens(t, u);
    },
  },
];

/**
 * Whether every value of type `from` converts to type `to` without loss, by a row of
 * {@link TYPE_WIDENINGS}; a type does not widen to itself.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { widens } from "./compatibility.ts";
 *
 * assert.equal(widens("INTEGER", "BIGINT"), true);
 * assert.equal(widens("BIGINT", "INTEGER"), false);
 * assert.equal(widens("VARCHAR(20)", "VARCHAR"), true);
 * assert.equal(widens("DECIMAL(10,2)", "DECIMAL(12,4)"), true);
 * assert.equal(widens("DECIMAL(10,2)", "DECIMAL(10,4)"), false);
 * assert.equal(widens("INTEGER", "DECIMAL(12,2)"), true);
 * assert.equal(widens("INTEGER[]", "BIGINT[]"), true);
 * assert.equal(widens("INTEGER", "VARCHAR"), false);
 * assert.equal(widens("integer", "bigint"), true); // PostgreSQL's names
 * assert.equal(widens("character varying(20)", "text"), true);
 * ```
 */
export function widens(from: string, to: string): boolean {
  const [a, b] = [comparableType(from), comparableType(to)];
  return a !== b && TYPE_WIDENINGS.some((row) => row.applies(a, b));
}

/**
 * Every violation of `mode` by `next` against the earlier versions (newest first): the latest
 * one, or all of them for a `_transitive` mode. `none` and `ignore` find none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { violations } from "./compatibility.ts";
 *
 * const v1 = { version: "1.0", keys: [], columns: [
 *   { name: "id", type: "INTEGER", nullable: false, defaulted: false },
 * ] };
 * const v2 = { version: "2.0", keys: [], columns: [
 *   { name: "id", type: "BIGINT", nullable: false, defaulted: false },
 *   { name: "note", type: "VARCHAR", nullable: false, defaulted: false },
 * ] };
 * const found = violations("backward", [v1], v2);
 * assert.deepEqual(found.map((v) => [v.column, v.change]), [["note", "column_added"]]);
 * assert.equal(violations("forward", [v1], v2)[0]?.change, "type_widened");
 * ```
 */
export function violations(
  mode: Compatibility,
  earlier: readonly TypedVersion[],
  next: TypedVersion,
): Violation[] {
  if (mode === "none" || mode === "ignore") return [];
  const against = mode.endsWith("_transitive") ? earlier : earlier.slice(0, 1);
  const rules: Rule[] = mode.startsWith("backward")
    ? ["backward"]
    : mode.startsWith("forward")
    ? ["forward"]
    : ["backward", "forward"];
  return against.flatMap((old) => rules.flatMap((rule) => between(rule, old, next)));
}

/** The violations of one rule between an older version and the new one. */
function between(rule: Rule, old: TypedVersion, next: TypedVersion): Violation[] {
  const found: Violation[] = [];
  const version = old.version;
  const add = (change: Change, where: { column: string; key?: string }, message: string) =>
    found.push({
      version,
      ...where,
      change,
      rule,
      message: `${message} (${rule}, against ${version})`,
    });
  const oldColumns = new Map(old.columns.map((c) => [nameKey(c.name), c]));
  const newColumns = new Map(next.columns.map((c) => [nameKey(c.name), c]));

  for (const column of next.columns) {
    const before = oldColumns.get(nameKey(column.name));
    if (!before) {
      if (rule === "backward" && !column.nullable && !column.defaulted) {
        add(
          "column_added",
          { column: column.name },
          `Column "${column.name}" is added NOT NULL without a default, so rows written under ` +
            `${version} have no value for it`,
        );
      }
      continue;
    }
    if (comparableType(before.type) !== comparableType(column.type)) {
      const wider = widens(before.type, column.type);
      const narrower = widens(column.type, before.type);
      if (rule === "backward" && !wider) {
        add(
          narrower ? "type_narrowed" : "type_changed",
          { column: column.name },
          `Column "${column.name}" changes type from ${before.type} to ${column.type}, ` +
            (narrower ? "a narrowing" : "which is not a widening"),
        );
      }
      if (rule === "forward" && !narrower) {
        add(
          wider ? "type_widened" : "type_changed",
          { column: column.name },
          `Column "${column.name}" changes type from ${before.type} to ${column.type}, ` +
            (wider ? "a widening" : "which is not a narrowing"),
        );
      }
    }
    if (rule === "backward" && before.nullable && !column.nullable) {
      add("not_null_added", { column: column.name }, `Column "${column.name}" becomes NOT NULL`);
    }
    if (rule === "forward" && !before.nullable && column.nullable) {
      add("not_null_dropped", { column: column.name }, `Column "${column.name}" becomes nullable`);
    }
  }
  if (rule === "forward") {
    for (const column of old.columns) {
      if (newColumns.has(nameKey(column.name)) || column.nullable || column.defaulted) continue;
      add(
        "column_dropped",
        { column: column.name },
        `Column "${column.name}" is dropped, but it is NOT NULL without a default in ${version}`,
      );
    }
  }

  // A key over a column only one side has is judged through that column's own rule.
  const onBothSides = (key: TypedKey) =>
    key.columns.every((c) => oldColumns.has(nameKey(c)) && newColumns.has(nameKey(c)));
  // Backward refuses keys only the new version has; forward, keys only the old one has.
  const [only, other] = rule === "backward" ? [next.keys, old.keys] : [old.keys, next.keys];
  const shared = new Set(other.map((k) => k.text));
  for (const key of only) {
    if (shared.has(key.text) || !onBothSides(key)) continue;
    const where = { column: key.columns.join(", "), key: key.text };
    if (rule === "backward") add("key_added", where, `The ${key.text} is added`);
    else add("key_dropped", where, `The ${key.text} is dropped`);
  }
  return found;
}
