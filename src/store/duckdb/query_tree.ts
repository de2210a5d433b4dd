/**
 * DuckDB's parse tree as JSON (`json_serialize_sql`), read with every number kept exact and
 * written back for `json_deserialize_sql`: what the guard (query_guard.ts) and the bounds
 * (query_bounds.ts) walk and rewrite.
 *
 * @module
 */

/** A parsed tree: plain JSON, its numbers kept as their exact text (see {@link parseTree}). */
export type Node = Record<string, unknown>;

interface ExactJson {
  parse(
    text: string,
    reviver: (key: string, value: unknown, context: { source?: string }) => unknown,
  ): unknown;
  rawJSON(text: string): unknown;
  isRawJSON(value: unknown): boolean;
}

const EXACT_JSON = JSON as unknown as ExactJson;

/**
 * A JSON string, or a bare `Infinity`, `-Infinity` or `NaN`: `json_serialize_sql` writes a
 * non-finite DOUBLE constant (`1e400`) as such a token, which is not JSON. Strings are matched
 * whole so that the same word inside one (a string literal of the query) is left as it is.
 */
const NON_FINITE_TOKEN = /"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g;

/**
 * The key of the object a non-finite token becomes before parsing. Every key of the tree is a
 * property name of DuckDB's serializer and the query's own text only ever lands in strings,
 * so no query can spell an object with this key.
 */
const NON_FINITE_KEY = "$non_finite";

/**
 * The tree of `json_serialize_sql`, each number kept as its text (`JSON.rawJSON`): a BIGINT
 * constant such as 9007199254740993 would otherwise come back from the rewrite rounded, and
 * the query would silently compare with another value. A non-finite constant becomes the
 * cast of its text (see {@link nonFinite}).
 */
export function parseTree(text: string): Node {
  const json = text.replaceAll(
    NON_FINITE_TOKEN,
    (token) => token.startsWith('"') ? token : `{"${NON_FINITE_KEY}":"${token}"}`,
  );
  return EXACT_JSON.parse(json, (_key, value, context) => {
    if (typeof value === "number" && context.source !== undefined) {
      return EXACT_JSON.rawJSON(context.source);
    }
    return isNode(value) ? nonFinite(value) ?? value : value;
  }) as Node;
}

/**
 * A constant holding a non-finite number, as a cast of its text (`CAST('Infinity' AS
 * DOUBLE)`), which means the same; undefined for any other node. `json_deserialize_sql`
 * refuses the constant itself in any spelling, so it could not be rewritten as it is. A marker
 * anywhere else stays, and the rewrite refuses it (400).
 */
function nonFinite(node: Node): Node | undefined {
  if (node.class !== "CONSTANT" || !isNode(node.value)) return undefined;
  const { type, value } = node.value;
  if (!isNode(value) || typeof value[NON_FINITE_KEY] !== "string") return undefined;
  const text = {
    class: "CONSTANT",
    type: "VALUE_CONSTANT",
    alias: "",
    query_location: node.query_location,
    value: {
      type: { id: "VARCHAR", type_info: null },
      is_null: false,
      value: value[NON_FINITE_KEY],
    },
  };
  return {
    class: "CAST",
    type: "OPERATOR_CAST",
    alias: node.alias,
    query_location: node.query_location,
    child: text,
    cast_type: type,
    try_cast: false,
  };
}

export function stringifyTree(tree: Node): string {
  return JSON.stringify(tree);
}

export function isNode(value: unknown): value is Node {
  return value !== null && typeof value === "object" && !Array.isArray(value) &&
    !EXACT_JSON.isRawJSON(value);
}
