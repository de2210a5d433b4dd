/**
 * PostgreSQL's built-in types as its wire protocol and catalog name them: the oid, the size
 * (`typlen`, -1 for variable), the oid of the array of it, and the name `format_type` gives.
 * Both engines describe result columns by these; the listener encodes values by them.
 *
 * @module
 */

/** One built-in type of PostgreSQL 15. */
export interface WireType {
  /** `pg_type.typname`. */
  readonly name: string;
  readonly oid: number;
  /** `pg_type.typlen`: bytes of a value, -1 when it varies. */
  readonly size: number;
  /** The oid of the array of this type; 0 for an array type. */
  readonly array: number;
  /** The element's oid for an array type; 0 otherwise. */
  readonly element: number;
  /** What `format_type` calls it without a modifier. */
  readonly sqlName: string;
}

const SCALARS: readonly [string, number, number, number, string][] = [
  ["bool", 16, 1, 1000, "boolean"],
  ["bytea", 17, -1, 1001, "bytea"],
  ["char", 18, 1, 1002, '"char"'],
  ["name", 19, 64, 1003, "name"],
  ["int8", 20, 8, 1016, "bigint"],
  ["int2", 21, 2, 1005, "smallint"],
  ["int4", 23, 4, 1007, "integer"],
  ["regproc", 24, 4, 1008, "regproc"],
  ["text", 25, -1, 1009, "text"],
  ["oid", 26, 4, 1028, "oid"],
  ["json", 114, -1, 199, "json"],
  ["xml", 142, -1, 143, "xml"],
  ["float4", 700, 4, 1021, "real"],
  ["float8", 701, 8, 1022, "double precision"],
  ["unknown", 705, -2, 0, "unknown"],
  ["bpchar", 1042, -1, 1014, "character"],
  ["varchar", 1043, -1, 1015, "character varying"],
  ["date", 1082, 4, 1182, "date"],
  ["time", 1083, 8, 1183, "time without time zone"],
  ["timestamp", 1114, 8, 1115, "timestamp without time zone"],
  ["timestamptz", 1184, 8, 1185, "timestamp with time zone"],
  ["interval", 1186, 16, 1187, "interval"],
  ["timetz", 1266, 12, 1270, "time with time zone"],
  ["bit", 1560, -1, 1561, "bit"],
  ["varbit", 1562, -1, 1563, "bit varying"],
  ["numeric", 1700, -1, 1231, "numeric"],
  ["regclass", 2205, 4, 2210, "regclass"],
  ["regtype", 2206, 4, 2211, "regtype"],
  ["uuid", 2950, 16, 2951, "uuid"],
  ["jsonb", 3802, -1, 3807, "jsonb"],
];

/** Every type of {@link SCALARS} and the array of each, by oid. */
export const WIRE_TYPES: ReadonlyMap<number, WireType> = new Map(
  SCALARS.flatMap(([name, oid, size, array, sqlName]): [number, WireType][] => {
    const scalar: [number, WireType] = [oid, { name, oid, size, array, element: 0, sqlName }];
    if (array === 0) return [scalar];
    return [scalar, [array, {
      name: `_${name}`,
      oid: array,
      size: -1,
      array: 0,
      element: oid,
      sqlName: `${sqlName}[]`,
    }]];
  }),
);

/** The oid of the type named `name` (`int4`, `_int4`). */
export function wireOid(name: string): number {
  for (const type of WIRE_TYPES.values()) if (type.name === name) return type.oid;
  throw new Error(`No wire type is named "${name}"`);
}

/**
 * The type modifier of `numeric(precision, scale)`, as PostgreSQL keeps it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { numericTypmod } from "./wire_types.ts";
 *
 * assert.equal(numericTypmod(10, 2), 655366);
 * ```
 */
export function numericTypmod(precision: number, scale: number): number {
  return ((precision << 16) | scale) + 4;
}

/** PostgreSQL's category letter (`typcategory`) of the type named `name`, an array's when `element` is set. */
export function typeCategory(name: string, element: number): string {
  if (element !== 0) return "A";
  if (name === "bool") return "B";
  if (/^(int[248]|float[48]|numeric|oid|reg\w+)$/.test(name)) return "N";
  if (/^(text|varchar|bpchar|name|char)$/.test(name)) return "S";
  if (/^(date|time|timestamp|timestamptz|timetz)$/.test(name)) return "D";
  if (name === "interval") return "T";
  if (/bit/.test(name)) return "V";
  return "U";
}
