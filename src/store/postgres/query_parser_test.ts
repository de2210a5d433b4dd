import assert from "node:assert/strict";
import { ParserExhausted, type PostgresParser, withPostgresParser } from "./query_parser.ts";

Deno.test("withPostgresParser() parses as before after many parses ran out of stack", async () => {
  const probe = "SELECT abs(x) + 1 AS y, 'str' FROM public.t AS q WHERE x IN (1, 2, 3) ORDER BY 1";
  const parse = (sql: string) => withPostgresParser((parser) => parser.parseSync(sql));
  const expected = JSON.stringify(await parse(probe));
  const deep = `SELECT ${Array(30_000).fill("1").join("+")}`;
  // A few dozen of these broke the package's single instance for good.
  for (let i = 0; i < 60; i++) await assert.rejects(parse(deep), ParserExhausted);
  assert.equal(JSON.stringify(await parse(probe)), expected);
});

Deno.test("withPostgresParser() runs a use again whose parser another use broke first", async () => {
  const deep = `SELECT ${Array(30_000).fill("1").join("+")}`;
  const given: PostgresParser[] = [];
  const tree = await withPostgresParser((parser) => {
    given.push(parser);
    // Another request's parse, in between: this parser is thrown away before this use parses.
    if (given.length === 1) assert.throws(() => parser.parseSync(deep), ParserExhausted);
    return parser.parseSync("SELECT 1");
  });
  assert.ok(tree);
  assert.equal(given.length, 2);
  assert.notEqual(given[0], given[1]);
});
