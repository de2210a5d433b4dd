/**
 * A client's catalog query respelled for the emulated catalog of wire_catalog.ts: its
 * `pg_catalog.` and `information_schema.` names to the emulation's schemas, PostgreSQL's
 * operators and casts (`OPERATOR(pg_catalog.~)`, `COLLATE pg_catalog.default`, `::regclass`)
 * as DuckDB spells them.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";

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
 *   catalogRewrite(String.raw`SELECT E'\' {a} \''::text[]`),
 *   String.raw`SELECT E'\' {a} \''::VARCHAR[]`,
 * );
 * assert.equal(
 *   catalogRewrite("SELECT FORMAT('%I.%s', n, t) FROM x"),
 *   "SELECT (wire_pg.quote_ident(CAST(n AS VARCHAR)) || '.' || coalesce(CAST(t AS VARCHAR), '')) FROM x",
 * );
 * assert.equal(
 *   catalogRewrite(`SELECT 1 WHERE 'x' <> ALL ('{a,"b,c",NULL}'::text[])`),
 *   "SELECT 1 WHERE 'x' <> ALL (['a', 'b,c', NULL]::VARCHAR[])",
 * );
 * assert.equal(
 *   catalogRewrite("SELECT s[1] FROM t, string_to_array('a,b', ',') s"),
 *   "SELECT s[1] FROM t, (SELECT string_to_array('a,b', ',') AS s) AS s",
 * );
 * assert.equal(
 *   catalogRewrite("SELECT string_to_array('a,b', ',') s FROM t"),
 *   "SELECT string_to_array('a,b', ',') s FROM t",
 * );
 * assert.equal(
 *   catalogRewrite("SELECT conrelid::pg_catalog.regclass AS ontable FROM pg_catalog.pg_constraint"),
 *   "SELECT wire_pg.regclass_name(conrelid) AS ontable FROM wire_pg.pg_constraint",
 * );
 * assert.equal(
 *   catalogRewrite("SELECT * FROM (SELECT conrelid::regclass AS r FROM pg_constraint) c"),
 *   "SELECT * FROM (SELECT wire_pg.to_regclass(conrelid) AS r FROM pg_constraint) c",
 * );
 * ```
 */
export function catalogRewrite(sql: string): string {
  // A dollar-quoted string would be taken for text to respell; no client's catalog query
  // has one.
  if (/\$(?:[A-Za-z_]\w*)?\$/.test(sql.replace(/'(?:[^']|'')*'/g, "''"))) {
    throw ApiError.badRequest("A catalog query cannot hold a dollar-quoted string");
  }
  // Cut into literals (escape strings with their backslashes too) and the rest; only the
  // rest is respelled.
  const parts = sql.split(/((?<![\w$])[Ee]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'|"(?:[^"]|"")*")/s);
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
  // An array literal (`'{a,b}'::text[]`) as a DuckDB list of the same items.
  for (let i = 1; i + 1 < parts.length; i += 2) {
    const cast =
      /^\s*::\s*(?:pg_catalog\s*\.\s*)?(text|name|varchar|character varying|int2|int4|int8|smallint|integer|bigint|oid)\s*\[\]/i
        .exec(parts[i + 1]!);
    if (!cast || !/^'\{.*\}'$/s.test(parts[i]!)) continue;
    const numbers = !/^(text|name|varchar|character varying)$/i.test(cast[1]!);
    parts[i] = `[${
      arrayItems(parts[i]!.slice(2, -2).replaceAll("''", "'"))
        .map((item) => item === null ? "NULL" : `'${item.replaceAll("'", "''")}'`).join(", ")
    }]::${numbers ? "BIGINT" : "VARCHAR"}[]`;
    parts[i + 1] = parts[i + 1]!.slice(cast[0].length);
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
  // `x::regclass` and `x::regtype` after a literal, a name or a parenthesis.
  return formatCalls(fromFunctions(rewritten.join("")))
    .replace(/\s*::\s*(regclass|regtype)\b/gi, "::$1")
    .split(/(?=::(?:regclass|regtype)\b)/i)
    .reduce((done, piece) => {
      const cast = /^::(regclass|regtype)\b/i.exec(piece);
      if (!cast) return done + piece;
      const start = operandStart(done);
      const rest = piece.slice(cast[0].length);
      // Shown (`x::regclass AS name` in the outermost select list), a relation is its name, as
      // PostgreSQL prints a regclass; compared, or in a subquery, it is its oid.
      const shown = cast[1]!.toLowerCase() === "regclass" && /^\s+AS\s/i.test(rest) &&
        depthAt(done) === 0;
      const to = shown ? "regclass_name" : `to_${cast[1]!.toLowerCase()}`;
      return `${done.slice(0, start)}wire_pg.${to}(${done.slice(start)})${rest}`;
    }, "");
}

/**
 * The items of a PostgreSQL array's text without its braces (one dimension): quoted items
 * with their backslash escapes undone, NULL unquoted as null.
 */
function arrayItems(text: string): (string | null)[] {
  const items: (string | null)[] = [];
  if (text.trim() === "") return items;
  for (const match of text.matchAll(/\s*(?:"((?:[^"\\]|\\.)*)"|([^,]*?))\s*(?:,|$)/gs)) {
    if (match.index === text.length) break;
    if (match[1] !== undefined) items.push(match[1].replace(/\\(.)/gs, "$1"));
    else items.push(match[2]!.toUpperCase() === "NULL" ? null : match[2]!);
  }
  return items;
}

/**
 * Where the parenthesis that opens at `open` in `sql` closes (past literals and quoted
 * names), and the texts of its arguments, apart at its own commas.
 */
function callArguments(sql: string, open: number): { end: number; args: string[] } {
  let depth = 0;
  const args: string[] = [];
  let from = open + 1;
  for (let at = open; at < sql.length; at++) {
    const char = sql[at]!;
    if (char === "'" || char === '"') {
      const close = sql.indexOf(char, at + 1);
      at = close < 0 ? sql.length : close;
    } else if (char === "(") depth++;
    else if (char === "," && depth === 1) {
      args.push(sql.slice(from, at).trim());
      from = at + 1;
    } else if (char === ")" && --depth === 0) {
      args.push(sql.slice(from, at).trim());
      return { end: at, args };
    }
  }
  return { end: sql.length, args };
}

/** A value's text as `format`'s `%L` writes it: a quoted literal, or NULL. */
function quotedLiteral(text: string): string {
  return `coalesce('''' || replace(${text}, '''', '''''') || '''', 'NULL')`;
}

/**
 * PostgreSQL's `format` with a literal format (`format('%I.%I', s, t)`) as the text it makes:
 * `%s` a value's text (nothing for NULL), `%I` a quoted name, `%L` a quoted literal, `%%`.
 * DuckDB's own `format` takes `{}`; other formats are left to it.
 */
function formatCalls(sql: string): string {
  const call = /(?<![\w.])format\s*\(/gi;
  let done = "";
  let from = 0;
  for (let found = call.exec(sql); found; found = call.exec(sql)) {
    if (found.index < from) continue;
    const { end, args } = callArguments(sql, found.index + found[0].length - 1);
    const pattern = /^'((?:[^']|'')*)'$/s.exec(args[0] ?? "");
    if (!pattern) continue;
    const pieces: string[] = [];
    let next = 1;
    let usable = true;
    for (const piece of pattern[1]!.split(/(%[sIL%])/)) {
      if (piece === "%%") pieces.push("'%'");
      else if (/^%[sIL]$/.test(piece)) {
        const arg = args[next++];
        if (arg === undefined) usable = false;
        const text = `CAST(${arg} AS VARCHAR)`;
        pieces.push(
          piece === "%s"
            ? `coalesce(${text}, '')`
            : piece === "%I"
            ? `wire_pg.quote_ident(${text})`
            : quotedLiteral(text),
        );
      } else if (piece.includes("%")) usable = false;
      else if (piece !== "") pieces.push(`'${piece}'`);
    }
    if (!usable) continue;
    done += sql.slice(from, found.index) + `(${pieces.join(" || ") || "''"})`;
    from = end + 1;
    call.lastIndex = from;
  }
  return done + sql.slice(from);
}

/** Words that end a FROM item rather than alias it. */
const NOT_ALIASES =
  /^(ON|WHERE|JOIN|LEFT|RIGHT|FULL|CROSS|INNER|NATURAL|GROUP|ORDER|UNION|LIMIT|FROM|WITH|HAVING|USING)$/i;

/**
 * Functions in a FROM list respelled as PostgreSQL reads them there: a set-returning
 * function's alias names its column too (`generate_series(…) i`, then `s[i]`), and a function
 * of one value is a relation of one row (`string_to_array(…) s`), a subquery to DuckDB.
 */
function fromFunctions(sql: string): string {
  const call = /\b(generate_series|string_to_array)\s*\(/gi;
  let done = "";
  let from = 0;
  for (let found = call.exec(sql); found; found = call.exec(sql)) {
    if (found.index < from) continue;
    // The call's closing parenthesis, past literals.
    let depth = 0;
    let end = found.index + found[0].length - 1;
    for (; end < sql.length; end++) {
      const char = sql[end]!;
      if (char === "'") {
        end = sql.indexOf("'", end + 1) < 0 ? sql.length : sql.indexOf("'", end + 1);
      } else if (char === "(") depth++;
      else if (char === ")" && --depth === 0) break;
    }
    const alias = /^\s+(?:AS\s+)?(\w+)\b(?!\s*\()/i.exec(sql.slice(end + 1));
    if (!alias || NOT_ALIASES.test(alias[1]!) || !inFromList(sql, found.index)) continue;
    const text = sql.slice(found.index, end + 1);
    const name = alias[1]!;
    done += sql.slice(from, found.index) +
      (found[1]!.toLowerCase() === "generate_series"
        ? `${text} AS ${name}(${name})`
        : `(SELECT ${text} AS ${name}) AS ${name}`);
    from = end + 1 + alias[0].length;
    call.lastIndex = from;
  }
  return done + sql.slice(from);
}

/** How many parentheses are open at the end of `sql`, outside its literals and names. */
function depthAt(sql: string): number {
  let depth = 0;
  for (let at = 0; at < sql.length; at++) {
    const char = sql[at]!;
    if (char === "'" || char === '"') {
      const close = sql.indexOf(char, at + 1);
      at = close < 0 ? sql.length : close;
    } else if (char === "(") depth++;
    else if (char === ")") depth--;
  }
  return depth;
}

/**
 * Whether the expression at `at` in `sql` stands in a FROM list: the clause keyword before it
 * at its own depth of parentheses is FROM or JOIN.
 */
function inFromList(sql: string, at: number): boolean {
  let depth = 0;
  for (let i = at - 1; i >= 0; i--) {
    const char = sql[i]!;
    if (char === ")") depth++;
    else if (char === "(") {
      if (depth === 0) return false;
      depth--;
    } else if (depth === 0 && /\w/.test(char) && !/\w/.test(sql[i - 1] ?? "")) {
      const word = /^\w+/.exec(sql.slice(i))![0].toUpperCase();
      if (word === "FROM" || word === "JOIN") return true;
      if (/^(SELECT|WHERE|ON|GROUP|ORDER|HAVING|LIMIT|SET|VALUES|RETURNING)$/.test(word)) {
        return false;
      }
    }
  }
  return false;
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
