import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import pg from "npm:pg@^8.23.1";
import { parseType } from "../../catalog/types.ts";
import { ApiError } from "../../errors.ts";
import { postgresMissing, startTestPostgres } from "../../../tests/helpers/postgres.ts";
import { postgresType, postgresTypes } from "./types.ts";

/** Every contract type the engine takes, with the canonical name PostgreSQL gives it. */
const MAPPED: readonly (readonly [string, string])[] = [
  ["boolean", "boolean"],
  ["bool", "boolean"],
  ["logical", "boolean"],
  ["smallint", "smallint"],
  ["int2", "smallint"],
  ["int16", "smallint"],
  ["short", "smallint"],
  ["integer", "integer"],
  ["int", "integer"],
  ["INT4", "integer"],
  ["int32", "integer"],
  ["signed", "integer"],
  ["integral", "integer"],
  ["bigint", "bigint"],
  ["int8", "bigint"],
  ["int64", "bigint"],
  ["long", "bigint"],
  ["smallserial", "smallint"],
  ["serial2", "smallint"],
  ["serial", "integer"],
  ["serial4", "integer"],
  ["bigserial", "bigint"],
  ["serial8", "bigint"],
  ["real", "real"],
  ["float4", "real"],
  ["float", "double precision"],
  ["float(24)", "real"],
  ["float(1)", "real"],
  ["float(25)", "double precision"],
  ["float(53)", "double precision"],
  ["double", "double precision"],
  ["double precision", "double precision"],
  ["float8", "double precision"],
  ["numeric", "numeric"],
  ["decimal", "numeric"],
  ["dec", "numeric"],
  ["numeric(10)", "numeric(10,0)"],
  ["numeric(10,2)", "numeric(10,2)"],
  ["DECIMAL(38, 10)", "numeric(38,10)"],
  ["numeric(1000, 1000)", "numeric(1000,1000)"],
  ["varchar", "character varying"],
  ["varchar(20)", "character varying(20)"],
  ["character varying", "character varying"],
  ["character varying(1)", "character varying(1)"],
  ["char varying(10485760)", "character varying(10485760)"],
  ["nvarchar", "character varying"],
  ["text", "text"],
  ["string", "text"],
  ["char", "character(1)"],
  ["char(3)", "character(3)"],
  ["character", "character(1)"],
  ["character(5)", "character(5)"],
  ["bpchar", "bpchar"],
  ["bpchar(4)", "character(4)"],
  ["bit", "bit(1)"],
  ["bit(8)", "bit(8)"],
  ["bit varying", "bit varying"],
  ["bit varying(8)", "bit varying(8)"],
  ["bitstring", "bit varying"],
  ["bytea", "bytea"],
  ["blob", "bytea"],
  ["binary", "bytea"],
  ["varbinary", "bytea"],
  ["uuid", "uuid"],
  ["guid", "uuid"],
  ["json", "json"],
  ["jsonb", "jsonb"],
  ["date", "date"],
  ["time", "time without time zone"],
  ["time(3)", "time(3) without time zone"],
  ["time without time zone", "time without time zone"],
  ["timetz", "time with time zone"],
  ["time with time zone", "time with time zone"],
  ["timestamp", "timestamp without time zone"],
  ["timestamp(0)", "timestamp(0) without time zone"],
  ["datetime", "timestamp without time zone"],
  ["timestamp_us", "timestamp without time zone"],
  ["timestamp without time zone", "timestamp without time zone"],
  ["timestamptz", "timestamp with time zone"],
  ["timestamptz(6)", "timestamp(6) with time zone"],
  ["timestamp with time zone", "timestamp with time zone"],
  ["timestamp_s", "timestamp(0) without time zone"],
  ["timestamp_ms", "timestamp(3) without time zone"],
  ["interval", "interval"],
  ["interval(2)", "interval(2)"],
  ["integer[]", "integer[]"],
  ["bigint[]", "bigint[]"],
  ["varchar(20)[]", "character varying(20)[]"],
  ["numeric(10,2)[]", "numeric(10,2)[]"],
  ["timestamp with time zone[]", "timestamp with time zone[]"],
  ["time(3)[]", "time(3) without time zone[]"],
  ["text[]", "text[]"],
  ["json[]", "json[]"],
  ["jsonb[]", "jsonb[]"],
  ["uuid[]", "uuid[]"],
  ["bytea[]", "bytea[]"],
  ["boolean[]", "boolean[]"],
  ["char[]", "character(1)[]"],
  ["bit(3)[]", "bit(3)[]"],
];

/** Contract types PostgreSQL lacks, with the type the refusal offers instead. */
const REFUSED: readonly (readonly [string, string | undefined])[] = [
  ["tinyint", "smallint"],
  ["int1", "smallint"],
  ["utinyint", "smallint"],
  ["uint8", "smallint"],
  ["usmallint", "integer"],
  ["uint16", "integer"],
  ["uinteger", "bigint"],
  ["uint32", "bigint"],
  ["ubigint", "numeric(20,0)"],
  ["uint64", "numeric(20,0)"],
  ["hugeint", "numeric(39,0)"],
  ["int128", "numeric(39,0)"],
  ["uhugeint", "numeric(39,0)"],
  ["uint128", "numeric(39,0)"],
  ["bignum", "numeric"],
  ["varint", "numeric"],
  ["oid", "bigint"],
  ["timestamp_ns", "timestamp"],
  ["time_ns", "time"],
  ['STRUCT(a INTEGER, "b c" VARCHAR)', "jsonb"],
  ["row", "jsonb"],
  ["STRUCT(a INTEGER)[]", "jsonb"],
  ["MAP(VARCHAR, INTEGER)", "jsonb"],
  ["UNION(n INTEGER, s VARCHAR)", "jsonb"],
  ["variant", "jsonb"],
  ["ENUM('a', 'b')", "text"],
  ["integer[3]", "integer[]"],
  ["integer[][]", "integer[]"],
  ["varchar(5)[2][]", "character varying(5)[]"],
  ["integer(5)", "integer"],
  ["text(10)", "text"],
  ["varchar(0)", "character varying"],
  ["varchar(10485761)", "character varying"],
  ["varchar(1, 2)", "character varying"],
  ["bit(0)", "bit(1)"],
  ["numeric(0)", "numeric"],
  ["numeric(1001)", "numeric"],
  ["numeric(10, 1001)", "numeric"],
  ["numeric(1, 2, 3)", "numeric"],
  ["float(0)", "double precision"],
  ["float(54)", "double precision"],
  ["timestamp(7)", "timestamp without time zone"],
  ["time with time zone(7)", "time with time zone"],
  ["interval(7)", "interval"],
  ["geometry", undefined],
  ["null", undefined],
  ["list", undefined],
  ["money", undefined],
  ["no_such_type", undefined],
];

Deno.test("postgresType() gives every contract type PostgreSQL's canonical name", () => {
  for (const [text, canonical] of MAPPED) {
    assert.equal(postgresType(parseType(text)), canonical, text);
  }
});

Deno.test("postgresType() refuses a type PostgreSQL lacks, naming it and what to use", () => {
  for (const [text, instead] of REFUSED) {
    const mapped = postgresType(parseType(text));
    assert.ok(typeof mapped === "object", `${text} maps to ${mapped}`);
    const sql = parseType(text).sql;
    assert.ok(mapped.problem.startsWith(`Type "${sql}" `), mapped.problem);
    if (instead === undefined) {
      assert.match(mapped.problem, / is unknown$/, text);
    } else assert.ok(mapped.problem.endsWith(`: use ${instead}`), mapped.problem);
  }
  assert.equal(
    (postgresType(parseType("uinteger")) as { problem: string }).problem,
    'Type "UINTEGER" does not exist on PostgreSQL (PostgreSQL has no unsigned integers): ' +
      "use bigint",
  );
});

Deno.test("postgresType() offers only types it takes itself", () => {
  for (const [text, instead] of REFUSED) {
    if (instead === undefined) continue;
    assert.equal(typeof postgresType(parseType(instead)), "string", `${text}: ${instead}`);
  }
});

Deno.test("postgresTypes() answers the types in order or 422 naming every refused column", () => {
  assert.deepEqual(
    postgresTypes([
      { name: "id", type: parseType("bigserial") },
      { name: "Unit Price", type: parseType("decimal(12,2)") },
    ]),
    ["bigint", "numeric(12,2)"],
  );
  assert.throws(
    () =>
      postgresTypes([
        { name: "a", type: parseType("hugeint") },
        { name: "b", type: parseType("text") },
        { name: "c", type: parseType("MAP(VARCHAR, INTEGER)") },
      ]),
    (error) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 422);
      assert.equal(error.type, "invalid_definition");
      assert.deepEqual(error.details?.map((d) => d.column), ["a", "c"]);
      assert.equal(
        error.message,
        'Column "a": Type "HUGEINT" does not exist on PostgreSQL (PostgreSQL has no 128-bit ' +
          "integer): use numeric(39,0) (and 1 more problems)",
      );
      return true;
    },
  );
});

Deno.test("docs/api.md's table of types on PostgreSQL says what postgresType() does", async () => {
  const api = await Deno.readTextFile(new URL("../../../docs/api.md", import.meta.url));
  const section = api.slice(api.indexOf("### Types on PostgreSQL"));
  const rows = section.slice(0, section.indexOf("\n## ")).split("\n")
    .filter((line) => line.startsWith("| `"));
  assert.ok(rows.length >= 30, `${rows.length} rows`);
  const ticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  for (const row of rows) {
    const [, contract, postgres] = row.split("|").map((cell) => cell.trim());
    const types = ticked(contract!);
    // Notes in parentheses after the names are not names.
    const names = ticked(postgres!.split(" (")[0]!);
    types.forEach((type, i) => {
      const mapped = postgresType(parseType(type));
      if (postgres!.startsWith("422: use ")) {
        assert.ok(typeof mapped === "object", `${type}: ${mapped}`);
        assert.ok(mapped.problem.endsWith(`: use ${names[0]}`), `${type}: ${mapped.problem}`);
      } else assert.equal(mapped, names.length === types.length ? names[i] : names[0], type);
    });
  }
});

const missing = await postgresMissing();
if (missing && Deno.env.get("REQUIRE_POSTGRES")) throw new Error(missing);

Deno.test({
  name: `postgresType() predicts format_type() on PostgreSQL 15, which lacks each refused type${
    missing ? ` (skipped: ${missing})` : ""
  }`,
  ignore: missing !== undefined,
  async fn(t) {
    const postgres = await startTestPostgres();
    if (typeof postgres === "string") throw new Error(postgres);
    const client = new pg.Client({ connectionString: postgres.url });
    try {
      await client.connect();
      const canonical = async (types: readonly string[]): Promise<string[]> => {
        await client.query("DROP TABLE IF EXISTS t");
        await client.query(
          `CREATE TABLE t (${types.map((type, i) => `c${i} ${type}`).join(", ")})`,
        );
        const result = await client.query(
          `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
           WHERE attrelid = 't'::regclass AND attnum > 0 ORDER BY attnum`,
        );
        return result.rows.map((row: { type: string }) => row.type);
      };

      await t.step("a table of every mapped type reads back with the names predicted", async () => {
        const names = MAPPED.map(([text]) => postgresType(parseType(text)) as string);
        assert.deepEqual(await canonical(names), MAPPED.map(([, name]) => name));
      });

      await t.step(
        "each canonical name is stable: made again from itself, it reads the same",
        async () => {
          const names = [...new Set(MAPPED.map(([, name]) => name))];
          assert.deepEqual(await canonical(names), names);
        },
      );

      await t.step(
        "each refused type fails on PostgreSQL, or reads back as less than it says",
        async () => {
          const taken: Record<string, string> = {};
          for (const [text] of REFUSED) {
            try {
              taken[text] = (await canonical([parseType(text).sql]))[0]!;
            } catch (error) {
              assert.ok(error instanceof Error && "code" in error, String(error));
            }
          }
          // An object identifier rather than DuckDB's BIGINT, arrays of any size and depth,
          // precisions cut to microseconds, and a type of PostgreSQL's the contract lacks.
          assert.deepEqual(taken, {
            oid: "oid",
            "integer[3]": "integer[]",
            "integer[][]": "integer[]",
            "varchar(5)[2][]": "character varying(5)[]",
            "timestamp(7)": "timestamp(6) without time zone",
            "interval(7)": "interval(6)",
            money: "money",
          });
        },
      );
    } finally {
      await client.end();
      await postgres.stop();
    }
  },
});
