/**
 * The contract's column types on PostgreSQL: which PostgreSQL type each one becomes, and
 * its canonical name, the text PostgreSQL's `format_type()` prints for it and so the text
 * responses carry. That text is also valid where DDL expects a type, so it is all the engine
 * needs. A type PostgreSQL cannot store faithfully is refused with the type it should be
 * instead; the reasons are in docs/decisions.md ("Types on PostgreSQL").
 *
 * Pure: no I/O. The input is the catalog's parse (src/catalog/types.ts), whose `sql` is a
 * normalized text (upper-case words, `(n, m)` arguments, `[n]` suffixes, nested types
 * spelled `STRUCT(`, `MAP(`, `UNION(`, `ENUM(`), which is what is read here.
 *
 * @module
 */

import type { ParsedType } from "../../catalog/types.ts";
import { ApiError, type ErrorDetail, summarise } from "../../errors.ts";

/** A type PostgreSQL lacks, and what to write instead. */
export interface TypeRefusal {
  /** A sentence naming the type and why, ending with the type to use instead. */
  readonly problem: string;
}

/** Longest `character varying(n)` and `character(n)`: PostgreSQL's limit, 10 MiB. */
const MAX_LENGTH = 10_485_760;
/** Longest `bit(n)` and `bit varying(n)`: PostgreSQL's limit. */
const MAX_BITS = 83_886_080;

/** What a name becomes: a rule for its arguments, or a refusal. */
type Rule =
  | { readonly kind: "plain"; readonly name: string }
  | { readonly kind: "length"; readonly name: string; readonly max: number; readonly bare: string }
  | { readonly kind: "precision"; readonly before: string; readonly after: string }
  | { readonly kind: "numeric" }
  | { readonly kind: "float" }
  | { readonly kind: "refuse"; readonly why: string; readonly instead: string };

const plain = (name: string): Rule => ({ kind: "plain", name });
const refuse = (why: string, instead: string): Rule => ({ kind: "refuse", why, instead });
const TIME = { kind: "precision", before: "time", after: " without time zone" } as const;
const TIMETZ = { kind: "precision", before: "time", after: " with time zone" } as const;
const STAMP = { kind: "precision", before: "timestamp", after: " without time zone" } as const;
const STAMPTZ = { kind: "precision", before: "timestamp", after: " with time zone" } as const;
const VARCHAR: Rule = {
  kind: "length",
  name: "character varying",
  max: MAX_LENGTH,
  bare: "character varying",
};
const CHAR: Rule = { kind: "length", name: "character", max: MAX_LENGTH, bare: "character(1)" };
const NESTED = "PostgreSQL has no nested type of this kind without a type of its own";

/**
 * Every name the contract's types use (DuckDB's names and aliases, with PostgreSQL's
 * spellings), upper case as the catalog renders them. A name not here is unknown.
 */
const RULES: Readonly<Record<string, Rule>> = {
  BOOLEAN: plain("boolean"),
  BOOL: plain("boolean"),
  LOGICAL: plain("boolean"),
  SMALLINT: plain("smallint"),
  INT2: plain("smallint"),
  INT16: plain("smallint"),
  SHORT: plain("smallint"),
  INTEGER: plain("integer"),
  INT: plain("integer"),
  INT4: plain("integer"),
  INT32: plain("integer"),
  SIGNED: plain("integer"),
  INTEGRAL: plain("integer"),
  BIGINT: plain("bigint"),
  INT8: plain("bigint"),
  INT64: plain("bigint"),
  LONG: plain("bigint"),
  REAL: plain("real"),
  FLOAT4: plain("real"),
  FLOAT: { kind: "float" },
  DOUBLE: plain("double precision"),
  "DOUBLE PRECISION": plain("double precision"),
  FLOAT8: plain("double precision"),
  NUMERIC: { kind: "numeric" },
  DECIMAL: { kind: "numeric" },
  DEC: { kind: "numeric" },
  VARCHAR,
  "CHARACTER VARYING": VARCHAR,
  "CHAR VARYING": VARCHAR,
  NVARCHAR: VARCHAR,
  TEXT: plain("text"),
  STRING: plain("text"),
  CHAR,
  CHARACTER: CHAR,
  BPCHAR: { kind: "length", name: "character", max: MAX_LENGTH, bare: "bpchar" },
  BIT: { kind: "length", name: "bit", max: MAX_BITS, bare: "bit(1)" },
  "BIT VARYING": { kind: "length", name: "bit varying", max: MAX_BITS, bare: "bit varying" },
  BITSTRING: plain("bit varying"),
  BYTEA: plain("bytea"),
  BLOB: plain("bytea"),
  BINARY: plain("bytea"),
  VARBINARY: plain("bytea"),
  UUID: plain("uuid"),
  GUID: plain("uuid"),
  JSON: plain("json"),
  JSONB: plain("jsonb"),
  DATE: plain("date"),
  TIME,
  "TIME WITHOUT TIME ZONE": TIME,
  TIMETZ,
  "TIME WITH TIME ZONE": TIMETZ,
  TIMESTAMP: STAMP,
  DATETIME: STAMP,
  TIMESTAMP_US: STAMP,
  "TIMESTAMP WITHOUT TIME ZONE": STAMP,
  TIMESTAMPTZ: STAMPTZ,
  "TIMESTAMP WITH TIME ZONE": STAMPTZ,
  TIMESTAMP_S: plain("timestamp(0) without time zone"),
  TIMESTAMP_MS: plain("timestamp(3) without time zone"),
  INTERVAL: { kind: "precision", before: "interval", after: "" },
  TIMESTAMP_NS: refuse("PostgreSQL keeps microseconds, not nanoseconds", "timestamp"),
  TIME_NS: refuse("PostgreSQL keeps microseconds, not nanoseconds", "time"),
  TINYINT: refuse("PostgreSQL has no one-byte integer", "smallint"),
  INT1: refuse("PostgreSQL has no one-byte integer", "smallint"),
  UTINYINT: refuse("PostgreSQL has no unsigned integers", "smallint"),
  UINT8: refuse("PostgreSQL has no unsigned integers", "smallint"),
  USMALLINT: refuse("PostgreSQL has no unsigned integers", "integer"),
  UINT16: refuse("PostgreSQL has no unsigned integers", "integer"),
  UINTEGER: refuse("PostgreSQL has no unsigned integers", "bigint"),
  UINT32: refuse("PostgreSQL has no unsigned integers", "bigint"),
  UBIGINT: refuse("PostgreSQL has no unsigned integers", "numeric(20,0)"),
  UINT64: refuse("PostgreSQL has no unsigned integers", "numeric(20,0)"),
  HUGEINT: refuse("PostgreSQL has no 128-bit integer", "numeric(39,0)"),
  INT128: refuse("PostgreSQL has no 128-bit integer", "numeric(39,0)"),
  UHUGEINT: refuse("PostgreSQL has no 128-bit integer", "numeric(39,0)"),
  UINT128: refuse("PostgreSQL has no 128-bit integer", "numeric(39,0)"),
  BIGNUM: refuse("PostgreSQL's integers without a limit are numeric", "numeric"),
  VARINT: refuse("PostgreSQL's integers without a limit are numeric", "numeric"),
  OID: refuse("it is a BIGINT on DuckDB but an object identifier on PostgreSQL", "bigint"),
  STRUCT: refuse(NESTED, "jsonb"),
  ROW: refuse(NESTED, "jsonb"),
  MAP: refuse(NESTED, "jsonb"),
  UNION: refuse(NESTED, "jsonb"),
  VARIANT: refuse("PostgreSQL has no type that holds any value", "jsonb"),
  ENUM: refuse("an enumeration is a type of its own in PostgreSQL", "text"),
};

/** A type name, its `(n, m)` arguments, then its `[n]` suffixes, as the catalog renders them. */
const SHAPE = /^([A-Z_][A-Z0-9_]*(?: [A-Z_][A-Z0-9_]*)*)(?:\((\d+(?:, \d+)*)\))?((?:\[\d*\])*)$/;

/**
 * The PostgreSQL type of a contract type: its canonical name, as `format_type()` prints it
 * and as responses carry it, which DDL also takes; or why PostgreSQL cannot hold it.
 * A `serial` type maps as its integer type; its sequence is the engine's to make.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseType } from "../../catalog/types.ts";
 * import { postgresType } from "./types.ts";
 *
 * assert.equal(postgresType(parseType("varchar(20)")), "character varying(20)");
 * assert.equal(postgresType(parseType("decimal(10, 2)[]")), "numeric(10,2)[]");
 * assert.equal(postgresType(parseType("timestamptz")), "timestamp with time zone");
 * assert.deepEqual(postgresType(parseType("hugeint")), {
 *   problem: 'Type "HUGEINT" does not exist on PostgreSQL (PostgreSQL has no 128-bit ' +
 *     "integer): use numeric(39,0)",
 * });
 * ```
 */
export function postgresType(type: ParsedType): string | TypeRefusal {
  // `timestamp(3) without time zone`, as PostgreSQL names it, has its precision inside the
  // name; the shape wants it after: `TIMESTAMP WITHOUT TIME ZONE(3)`.
  const shape = SHAPE.exec(
    type.sql.replace(/^(TIMESTAMP|TIME)\((\d+)\) (WITH|WITHOUT) TIME ZONE/, "$1 $3 TIME ZONE($2)"),
  );
  // Only nested types (STRUCT, MAP, UNION, ENUM) fall outside the shape; their first word
  // names them.
  const name = shape?.[1] ?? /^[A-Z_]+/.exec(type.sql)?.[0] ?? type.sql;
  const rule = RULES[name];
  const refused = (why: string, instead?: string): TypeRefusal => ({
    problem: `Type "${type.sql}" ${why}${instead ? `: use ${instead}` : ""}`,
  });
  if (rule === undefined) return refused("is unknown");
  if (rule.kind === "refuse") {
    return refused(`does not exist on PostgreSQL (${rule.why})`, rule.instead);
  }
  if (!shape) return refused("is not a type PostgreSQL takes");
  const args = shape[2] === undefined ? [] : shape[2].split(", ").map(Number);
  const suffix = shape[3]!;
  let scalar: string | TypeRefusal;
  switch (rule.kind) {
    case "plain":
      scalar = args.length === 0 ? rule.name : refused("takes no arguments", rule.name);
      break;
    case "length": {
      const [n] = args;
      scalar = args.length === 0
        ? rule.bare
        : args.length === 1 && n! >= 1 && n! <= rule.max
        ? `${rule.name}(${n})`
        : refused(`takes one length from 1 to ${rule.max}`, rule.bare);
      break;
    }
    case "precision": {
      const [p] = args;
      scalar = args.length === 0
        ? `${rule.before}${rule.after}`
        : args.length === 1 && p! <= 6
        ? `${rule.before}(${p})${rule.after}`
        : refused("takes one precision from 0 to 6", `${rule.before}${rule.after}`);
      break;
    }
    case "numeric": {
      const [p, s = 0] = args;
      // PostgreSQL 15 takes a scale from -1000 to 1000, beyond the precision too; the
      // contract's grammar has no negative numbers.
      scalar = args.length === 0
        ? "numeric"
        : args.length <= 2 && p! >= 1 && p! <= 1000 && s <= 1000
        ? `numeric(${p},${s})`
        : refused("takes a precision from 1 to 1000 and a scale up to 1000", "numeric");
      break;
    }
    case "float": {
      const [p] = args;
      // PostgreSQL's meaning: float is double precision, float(1–24) real, float(25–53)
      // double precision. DuckDB's FLOAT is four bytes; it is written real on both.
      scalar = args.length === 0
        ? "double precision"
        : args.length === 1 && p! >= 1 && p! <= 53
        ? p! <= 24 ? "real" : "double precision"
        : refused("takes one precision from 1 to 53", "double precision");
      break;
    }
  }
  if (typeof scalar !== "string" || suffix === "") return scalar;
  if (suffix !== "[]") {
    // PostgreSQL neither checks an array's size nor tells `integer[][]` from `integer[]`
    // (every array may have any number of dimensions), so neither would hold what it says.
    return refused(
      "is not a type PostgreSQL keeps: its arrays have no fixed size and are not nested",
      `${scalar}[]`,
    );
  }
  return `${scalar}[]`;
}

/**
 * The PostgreSQL types of a table's columns, in order, or 422 `invalid_definition` naming
 * every column whose type PostgreSQL lacks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseType } from "../../catalog/types.ts";
 * import { ApiError } from "../../errors.ts";
 * import { postgresTypes } from "./types.ts";
 *
 * assert.deepEqual(postgresTypes([{ name: "id", type: parseType("serial") }]), ["integer"]);
 * assert.throws(
 *   () => postgresTypes([{ name: "n", type: parseType("utinyint") }]),
 *   (error) => error instanceof ApiError && error.status === 422,
 * );
 * ```
 */
export function postgresTypes(
  columns: readonly { readonly name: string; readonly type: ParsedType }[],
): string[] {
  const problems: ErrorDetail[] = [];
  const types = columns.map((column) => {
    const mapped = postgresType(column.type);
    if (typeof mapped === "string") return mapped;
    problems.push({ column: column.name, message: `Column "${column.name}": ${mapped.problem}` });
    return "";
  });
  if (problems.length > 0) throw ApiError.unprocessable(summarise(problems), problems);
  return types;
}

const NUMBERS = /^(smallint|integer|bigint|real|double precision|numeric(\(\d+,\d+\))?)$/;

/**
 * Whether `type`, a canonical type as `format_type()` prints it, is a number: an integer,
 * a floating-point type or a numeric.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { numberType } from "./types.ts";
 *
 * assert.ok(numberType("numeric(18,3)"));
 * assert.ok(!numberType("integer[]"));
 * ```
 */
export function numberType(type: string): boolean {
  return NUMBERS.test(type);
}
