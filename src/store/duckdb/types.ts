/**
 * DuckDB type names parsed as far as their nesting: lists and arrays, structs and maps, so
 * that values inside them can be converted element by element like top-level ones.
 *
 * @module
 */

import { quoteIdent } from "./sql.ts";

/** A DuckDB type by its nesting; every type that holds no others is a `scalar`. */
export type NestedType =
  | { readonly kind: "scalar"; readonly name: string }
  /** `T[]`, or the fixed-size array `T[n]` when `size` is given. */
  | { readonly kind: "list"; readonly element: NestedType; readonly size?: string }
  | { readonly kind: "struct"; readonly fields: readonly StructField[] }
  | { readonly kind: "map"; readonly key: NestedType; readonly value: NestedType };

/** One field of a STRUCT. */
export interface StructField {
  readonly name: string;
  readonly type: NestedType;
}

/**
 * Parses a type as DuckDB spells it (`STRUCT("a b" INTEGER[], c MAP(VARCHAR, BLOB))[2]`).
 * Anything it does not take apart, `DECIMAL(10,2)` or `UNION(…)` say, is a scalar; so is
 * text it cannot read, which then goes to DuckDB whole.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseType } from "./types.ts";
 *
 * assert.deepEqual(parseType('STRUCT("a b" BIGINT[])'), {
 *   kind: "struct",
 *   fields: [{ name: "a b", type: { kind: "list", element: { kind: "scalar", name: "BIGINT" } } }],
 * });
 * ```
 */
export function parseType(text: string): NestedType {
  const type = text.trim();
  const array = /\[(\d*)\]$/.exec(type);
  if (array) {
    const element = parseType(type.slice(0, array.index));
    return array[1] ? { kind: "list", element, size: array[1] } : { kind: "list", element };
  }
  const open = type.indexOf("(");
  if (open > 0 && type.endsWith(")")) {
    const head = type.slice(0, open).trim().toUpperCase();
    const parts = splitTopLevel(type.slice(open + 1, -1));
    if (head === "MAP" && parts.length === 2) {
      return { kind: "map", key: parseType(parts[0]!), value: parseType(parts[1]!) };
    }
    const fields = head === "STRUCT" ? parts.map(field) : [];
    if (fields.length > 0 && fields.every((f) => f !== undefined)) {
      return { kind: "struct", fields: fields as StructField[] };
    }
  }
  return { kind: "scalar", name: type };
}

/** The type's name as DuckDB takes it back. */
export function typeName(type: NestedType): string {
  switch (type.kind) {
    case "scalar":
      return type.name;
    case "list":
      return `${typeName(type.element)}[${type.size ?? ""}]`;
    case "struct":
      return `STRUCT(${
        type.fields.map((f) => `${quoteIdent(f.name)} ${typeName(f.type)}`).join(", ")
      })`;
    case "map":
      return `MAP(${typeName(type.key)}, ${typeName(type.value)})`;
  }
}

/** Whether a scalar somewhere in `type` (itself included) passes `test`. */
export function holds(type: NestedType, test: (scalar: string) => boolean): boolean {
  switch (type.kind) {
    case "scalar":
      return test(type.name);
    case "list":
      return holds(type.element, test);
    case "struct":
      return type.fields.some((f) => holds(f.type, test));
    case "map":
      return holds(type.key, test) || holds(type.value, test);
  }
}

/** `type` with each scalar replaced as `replace` says. */
export function mapScalars(type: NestedType, replace: (scalar: string) => string): NestedType {
  switch (type.kind) {
    case "scalar":
      return { kind: "scalar", name: replace(type.name) };
    case "list":
      return { ...type, element: mapScalars(type.element, replace) };
    case "struct":
      return {
        kind: "struct",
        fields: type.fields.map((f) => ({ name: f.name, type: mapScalars(f.type, replace) })),
      };
    case "map":
      return {
        kind: "map",
        key: mapScalars(type.key, replace),
        value: mapScalars(type.value, replace),
      };
  }
}

/** A struct field's text (`name TYPE`, the name maybe double-quoted) parsed. */
function field(text: string): StructField | undefined {
  const trimmed = text.trim();
  if (trimmed.startsWith('"')) {
    let end = 1;
    for (; end < trimmed.length; end++) {
      if (trimmed[end] !== '"') continue;
      if (trimmed[end + 1] !== '"') break;
      end++; // A doubled quote stands for one.
    }
    return {
      name: trimmed.slice(1, end).replaceAll('""', '"'),
      type: parseType(trimmed.slice(end + 1)),
    };
  }
  const space = trimmed.search(/\s/);
  if (space < 0) return undefined;
  return { name: trimmed.slice(0, space), type: parseType(trimmed.slice(space + 1)) };
}

/** `text` split at its commas outside brackets and quotes. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      // A doubled quote inside quotes stands for one and does not end them.
      if (c === quote) {
        if (text[i + 1] === quote) i++;
        else quote = undefined;
      }
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "(" || c === "[") depth++;
    else if (c === ")" || c === "]") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== "");
}
