/**
 * A client's catalog query respelled for the emulated catalog of wire_catalog.ts: its
 * `pg_catalog.` and `information_schema.` names to the emulation's schemas, PostgreSQL's
 * operators and casts (`OPERATOR(pg_catalog.~)`, `COLLATE pg_catalog.default`, `::regclass`)
 * as DuckDB spells them.
 *
 * @module
 */

/**
 * A catalog query respelled for the emulation, outside its string literals and quoted names.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { catalogRewrite } from "./wire_catalog_rewrite.ts";
 *
 * assert.equal(
 *   catalogRewrite("SELECT 'pg_catalog.x' FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND c.oid = 't'::pg_catalog.regclass"),
 *   "SELECT 'pg_catalog.x' FROM wire_pg.pg_class c WHERE c.relname ~ '(?s).*(?:^(t)$).*'  AND c.oid = wire_pg.to_regclass('t')",
 * );
 * assert.equal(
 *   catalogRewrite("SELECT conrelid::pg_catalog.regclass AS ontable FROM pg_catalog.pg_constraint"),
 *   "SELECT wire_pg.regclass_name(conrelid) AS ontable FROM wire_pg.pg_constraint",
 * );
 * ```
 */
export function catalogRewrite(sql: string): string {
  // Cut into literals and the rest; only the rest is respelled.
  const parts = sql.split(/('(?:[^']|'')*'|"(?:[^"]|"")*")/);
  // PostgreSQL's `~` finds the pattern anywhere; DuckDB's matches the whole text: a literal
  // pattern after `~`, `!~`, `~*` or `!~*` is widened to match anywhere.
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const operator = /(!?)~(\*?)\s*$/.exec(
      parts[i]!.replace(/OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?(!?~\*?)\s*\)\s*$/i, "$1"),
    );
    const pattern = parts[i + 1]!;
    if (!operator || !pattern.startsWith("'")) continue;
    parts[i] = parts[i]!.replace(
      /(?:OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?)?!?~\*?\s*\)?\s*$/i,
      `${operator[1]}~ `,
    );
    parts[i + 1] = `'(?s${operator[2] ? "i" : ""}).*(?:${pattern.slice(1, -1)}).*'`;
  }
  const rewritten = parts.map((part, i) => {
    if (i % 2 === 1) {
      return part === '"pg_catalog"'
        ? "wire_pg"
        : part === '"information_schema"'
        ? "wire_is"
        : part;
    }
    return part
      .replace(/OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?([~!=<>*]+)\s*\)/gi, "$1")
      .replace(/COLLATE\s+(?:pg_catalog\s*\.\s*)?(?:default|"default"|"C"|C)\b/gi, "")
      .replace(/::\s*pg_catalog\s*\./gi, "::")
      .replace(/::\s*(oid|regproc|regnamespace|xid|cid)\b(\[\])?/gi, "::BIGINT$2")
      .replace(/::\s*(name|"char"|text)\b/gi, "::VARCHAR")
      .replace(/::\s*int2vector\b/gi, "::INTEGER[]")
      .replace(/\bpg_catalog\s*\.\s*(?=\w+\s*\()/gi, "")
      .replace(/\bpg_catalog\s*\./gi, "wire_pg.")
      .replace(/\binformation_schema\s*\./gi, "wire_is.")
      .replace(/\bjson_build_object\s*\(/gi, "json_object(")
      // An int2vector's text is its numbers apart by blanks; `x = ANY(list)` in a join's
      // condition is a subquery to DuckDB, which an outer join cannot take.
      .replace(
        /([\w.]*\b(?:indkey|indoption))\s*::\s*(?:varchar|text)\b/gi,
        "array_to_string($1, ' ')",
      )
      .replace(/([\w.]+)\s*=\s*ANY\s*\(\s*([\w.]+)\s*\)/gi, "list_contains($2, $1)");
  });
  // `x::regclass` and `x::regtype` after a literal, a name or a parenthesis; a set-returning
  // function's alias names its column too, as in PostgreSQL (`generate_series(…) s`).
  return rewritten.join("")
    .replace(
      /(generate_series\s*\((?:[^()]|\([^()]*(?:\([^()]*\)[^()]*)*\))*\))\s+(?:AS\s+)?(\w+)\b(?!\s*\()/gi,
      (whole, call: string, alias: string) =>
        /^(ON|WHERE|JOIN|LEFT|CROSS|INNER|GROUP|ORDER|UNION|LIMIT)$/i.test(alias)
          ? whole
          : `${call} AS ${alias}(${alias})`,
    )
    .replace(/\s*::\s*(regclass|regtype)\b/gi, "::$1")
    .split(/(?=::(?:regclass|regtype)\b)/i)
    .reduce((done, piece) => {
      const cast = /^::(regclass|regtype)\b/i.exec(piece);
      if (!cast) return done + piece;
      const start = operandStart(done);
      const rest = piece.slice(cast[0].length);
      // Shown (`x::regclass AS name` in a select list), a relation is its name, as PostgreSQL
      // prints a regclass; compared, it is its oid.
      const shown = cast[1]!.toLowerCase() === "regclass" && /^\s+AS\s/i.test(rest);
      const to = shown ? "regclass_name" : `to_${cast[1]!.toLowerCase()}`;
      return `${done.slice(0, start)}wire_pg.${to}(${done.slice(start)})${rest}`;
    }, "");
}

/**
 * Where the operand that ends `text` begins: a literal, a parenthesised expression (and the
 * function name before it), or a name.
 */
function operandStart(text: string): number {
  let at = text.length - 1;
  if (text[at] === "'") {
    at--;
    while (at >= 0 && !(text[at] === "'" && text[at - 1] !== "'")) at -= text[at] === "'" ? 2 : 1;
    return Math.max(at, 0);
  }
  if (text[at] === ")") {
    let depth = 0;
    for (; at >= 0; at--) {
      if (text[at] === ")") depth++;
      else if (text[at] === "(" && --depth === 0) break;
    }
  }
  while (at > 0 && /[\w.]/.test(text[at - 1]!)) at--;
  return Math.max(at, 0);
}
