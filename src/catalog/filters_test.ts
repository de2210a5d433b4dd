import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import fc from "npm:fast-check@^4.10.2";
import { ApiError } from "../errors.ts";
import {
  decodeCursor,
  encodeCursor,
  type Filter,
  orderSignature,
  parseReadQuery,
  type ReadQuery,
} from "./filters.ts";

const COLUMNS = [
  { name: "id", type: "BIGINT" },
  { name: "name", type: "VARCHAR" },
  { name: "age", type: "INTEGER" },
  { name: "Unit Price", type: "DECIMAL(10,2)" },
  { name: 'say "hi", then', type: "VARCHAR" },
  { name: "a.b", type: "VARCHAR" },
  { name: "City", type: "VARCHAR" },
];

function parse(query: string, extraReserved: string[] = []): ReadQuery {
  return parseReadQuery(new URLSearchParams(query), COLUMNS, extraReserved);
}

function refused(query: string, pattern: RegExp): void {
  assert.throws(() => parse(query), (error: unknown) => {
    assert.ok(error instanceof ApiError, `not an ApiError: ${error}`);
    assert.equal(error.status, 400);
    assert.match(error.message, pattern);
    return true;
  });
}

function filterOf(query: string): Filter {
  const { filters } = parse(query);
  assert.equal(filters.length, 1);
  return filters[0]!;
}

Deno.test("parseReadQuery() with no parameters reads all columns unordered, counted", () => {
  assert.deepEqual(parse(""), { filters: [], order: [], count: "exact" });
});

Deno.test("parseReadQuery() ignores the reserved parameters it does not parse", () => {
  assert.deepEqual(
    parse("schema=s&offset=1&limit=2&after=x&timezone_offset=60"),
    { filters: [], order: [], count: "exact" },
  );
});

Deno.test("parseReadQuery() ignores the caller's extra reserved parameters", () => {
  assert.deepEqual(parse("format=csv", ["format"]).filters, []);
  refused("format=csv", /format names column "format", which the table lacks/);
});

Deno.test("parseReadQuery() takes select's columns in the order given", () => {
  assert.deepEqual(parse("select=name,id").select, ["name", "id"]);
});

Deno.test("parseReadQuery() takes a quoted select name holding a space, comma and quotes", () => {
  assert.deepEqual(
    parse(`select="Unit Price","say ""hi"", then",id`).select,
    ["Unit Price", 'say "hi", then', "id"],
  );
});

Deno.test("parseReadQuery() takes a bare select name holding a space or a dot", () => {
  assert.deepEqual(parse("select=Unit Price,a.b").select, ["Unit Price", "a.b"]);
});

Deno.test("parseReadQuery() trims spaces around select items", () => {
  assert.deepEqual(parse("select= id , name ").select, ["id", "name"]);
});

Deno.test("parseReadQuery() takes select=* as every column", () => {
  assert.equal(parse("select=*").select, undefined);
});

Deno.test("parseReadQuery() matches a column exactly first, then ignoring case", () => {
  assert.deepEqual(parse("select=city,NAME").select, ["City", "name"]);
  assert.deepEqual(parse("CITY=eq.Oslo").filters[0]?.column, "City");
});

Deno.test("parseReadQuery() takes the exact spelling even when others match ignoring case", () => {
  const columns = [{ name: "ab", type: "INTEGER" }, { name: "AB", type: "INTEGER" }];
  assert.deepEqual(parseReadQuery([["select", "AB"]], columns).select, ["AB"]);
});

Deno.test("parseReadQuery() refuses a name matching two columns when case is ignored", () => {
  const columns = [{ name: "ab", type: "INTEGER" }, { name: "AB", type: "INTEGER" }];
  assert.throws(
    () => parseReadQuery([["select", "Ab"]], columns),
    /select names column "Ab", which matches 2 columns when case is ignored/,
  );
});

Deno.test("parseReadQuery() refuses select naming an unknown column, saying which", () => {
  refused("select=id,nope", /select names column "nope", which the table lacks/);
});

Deno.test("parseReadQuery() refuses select naming a column twice, even in other case", () => {
  refused("select=id,name,id", /select names column "id" twice/);
  refused("select=name,NAME", /select names column "name" twice/);
});

Deno.test("parseReadQuery() refuses an empty or dangling select item", () => {
  refused("select=", /select has an empty item/);
  refused("select=id,", /select has an empty item/);
  refused("select=id,,name", /select has an empty item/);
});

Deno.test("parseReadQuery() refuses an unclosed quote in select", () => {
  refused('select="Unit Price', /select has a quote that is not closed/);
});

Deno.test("parseReadQuery() refuses text after a quoted select name", () => {
  refused('select="id"x', /not a column name/);
});

Deno.test("parseReadQuery() refuses select, order or count given twice", () => {
  refused("select=id&select=name", /select is given more than once/);
  refused("order=id&order=name", /order is given more than once/);
  refused("count=exact&count=none", /count is given more than once/);
});

for (const op of ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike"]) {
  Deno.test(`parseReadQuery() takes ${op} with its value as text`, () => {
    assert.deepEqual(filterOf(`age=${op}.42`), { column: "age", op, negated: false, value: "42" });
  });
  Deno.test(`parseReadQuery() takes not.${op} as negated`, () => {
    assert.deepEqual(filterOf(`name=not.${op}.x`), {
      column: "name",
      op,
      negated: true,
      value: "x",
    });
  });
}

Deno.test("parseReadQuery() keeps every dot, comma and quote of a value after the operator", () => {
  assert.equal(filterOf('name=eq.a.b,c"d').value, 'a.b,c"d');
  assert.equal(filterOf("name=like.*.csv").value, "*.csv");
});

Deno.test("parseReadQuery() takes an empty value as the empty string", () => {
  assert.equal(filterOf("name=eq.").value, "");
});

Deno.test("parseReadQuery() keeps a value's spaces and percent signs", () => {
  assert.equal(filterOf("name=like.%25 a %25").value, "% a %");
});

Deno.test("parseReadQuery() ANDs every filter, several on one column too", () => {
  assert.deepEqual(parse("age=gte.18&age=lt.65&name=neq.x").filters, [
    { column: "age", op: "gte", negated: false, value: "18" },
    { column: "age", op: "lt", negated: false, value: "65" },
    { column: "name", op: "neq", negated: false, value: "x" },
  ]);
});

Deno.test("parseReadQuery() takes a filter on a column with a space or a dot in its name", () => {
  assert.equal(filterOf("Unit Price=gt.3").column, "Unit Price");
  assert.equal(filterOf("a.b=eq.1").column, "a.b");
});

Deno.test("parseReadQuery() takes is.null, is.true and is.false", () => {
  assert.equal(filterOf("age=is.null").value, null);
  assert.equal(filterOf("age=is.true").value, true);
  assert.equal(filterOf("age=is.false").value, false);
  assert.equal(filterOf("age=is.NULL").value, null);
});

Deno.test("parseReadQuery() takes not.is.null", () => {
  assert.deepEqual(filterOf("age=not.is.null"), {
    column: "age",
    op: "is",
    negated: true,
    value: null,
  });
});

Deno.test("parseReadQuery() refuses is with anything but null, true or false", () => {
  refused("age=is.nil", /age has is\.nil; use is\.null, is\.true or is\.false/);
  refused("age=is.", /use is\.null/);
});

Deno.test("parseReadQuery() takes an in list of bare values", () => {
  assert.deepEqual(filterOf("id=in.(1,2,3)").value, ["1", "2", "3"]);
});

Deno.test("parseReadQuery() trims the bare values of an in list", () => {
  assert.deepEqual(filterOf("id=in.( 1 , 2 )").value, ["1", "2"]);
});

Deno.test("parseReadQuery() takes quoted in values holding commas, parentheses and quotes", () => {
  assert.deepEqual(filterOf('name=in.("a,b","(c)","say ""hi""",d)').value, [
    "a,b",
    "(c)",
    'say "hi"',
    "d",
  ]);
});

Deno.test("parseReadQuery() keeps the spaces inside a quoted in value", () => {
  assert.deepEqual(filterOf('name=in.(" a ")').value, [" a "]);
});

Deno.test("parseReadQuery() takes an empty in list as no values", () => {
  assert.deepEqual(filterOf("id=in.()").value, []);
});

Deno.test("parseReadQuery() takes the empty string in an in list only quoted", () => {
  assert.deepEqual(filterOf('name=in.("",a)').value, ["", "a"]);
  refused("name=in.(,a)", /name has an empty item/);
});

Deno.test("parseReadQuery() takes not.in", () => {
  assert.deepEqual(filterOf("id=not.in.(1)"), {
    column: "id",
    op: "in",
    negated: true,
    value: ["1"],
  });
});

Deno.test("parseReadQuery() refuses an in list without parentheses", () => {
  refused("id=in.1,2", /id has in\.1,2; write in\.\(a,b,"c,d"\)/);
  refused("id=in.(1,2", /write in\./);
});

Deno.test("parseReadQuery() refuses a bare in value holding a parenthesis or a quote", () => {
  refused("id=in.((1),2)", /quote a value holding/);
  refused('id=in.(a"b)', /quote/);
});

Deno.test("parseReadQuery() refuses text after a quoted in value", () => {
  refused('name=in.("a"b)', /text after the quoted value "a"/);
});

Deno.test("parseReadQuery() refuses an unclosed quote in an in list", () => {
  refused('name=in.("a,b)', /quote that is not closed/);
});

Deno.test("parseReadQuery() refuses an unknown operator, naming the parameter", () => {
  refused("age=between.1", /age has the unknown operator "between"/);
  refused("age=42", /age has the unknown operator "42"/);
  refused("age=", /age has the unknown operator ""/);
  refused("age=EQ.1", /unknown operator "EQ"/);
});

Deno.test("parseReadQuery() refuses an operator without its dot and value", () => {
  refused("age=eq", /age has eq without a value after "eq\."/);
  refused("age=in", /in without a value/);
  refused("age=not.is", /is without a value/);
});

Deno.test("parseReadQuery() refuses a double negation", () => {
  refused("age=not.not.eq.1", /unknown operator "not"/);
});

Deno.test("parseReadQuery() refuses a parameter naming no column", () => {
  refused("nope=eq.1", /nope names column "nope", which the table lacks/);
  refused("=eq.1", /names column "", which the table lacks/);
});

Deno.test("parseReadQuery() quotes a hostile parameter name printably", () => {
  refused("x%00y=eq.1", /column "x\\u0000y"/);
});

Deno.test("parseReadQuery() takes order terms with direction and nulls", () => {
  assert.deepEqual(parse("order=age.desc.nullslast,name,id.asc,City.nullsfirst").order, [
    { column: "age", direction: "desc", nulls: "last" },
    { column: "name", direction: "asc" },
    { column: "id", direction: "asc" },
    { column: "City", direction: "asc", nulls: "first" },
  ]);
});

Deno.test("parseReadQuery() takes a quoted order column with modifiers after it", () => {
  assert.deepEqual(parse('order="Unit Price".desc,"say ""hi"", then"').order, [
    { column: "Unit Price", direction: "desc" },
    { column: 'say "hi", then', direction: "asc" },
  ]);
});

Deno.test("parseReadQuery() takes a bare order column holding a dot", () => {
  assert.deepEqual(parse("order=a.b.desc").order, [{ column: "a.b", direction: "desc" }]);
});

Deno.test("parseReadQuery() refuses order naming a column twice", () => {
  refused("order=age.desc,age", /order names column "age" twice/);
});

Deno.test("parseReadQuery() refuses order naming an unknown column", () => {
  refused("order=nope.desc", /order names column "nope", which the table lacks/);
  refused("order=age.down", /order names column "age.down", which the table lacks/);
});

Deno.test("parseReadQuery() refuses modifiers in the wrong order or with no column", () => {
  refused("order=age.nullslast.desc", /order names column "age.nullslast"/);
  refused("order=.desc", /order has "\.desc"/);
  refused('order="age"desc', /order has/);
  refused("order=age,", /order has an empty item/);
});

Deno.test("parseReadQuery() takes count=exact, count=estimated and count=none", () => {
  assert.equal(parse("count=exact").count, "exact");
  assert.equal(parse("count=estimated").count, "estimated");
  assert.equal(parse("count=none").count, "none");
});

Deno.test("parseReadQuery() refuses any other count", () => {
  refused("count=planned", /count must be exact, estimated or none, not "planned"/);
});

Deno.test("parseReadQuery() accepts the parameters as pairs too", () => {
  assert.deepEqual(
    parseReadQuery([["select", "id"], ["id", "eq.1"]], COLUMNS),
    {
      select: ["id"],
      filters: [{ column: "id", op: "eq", negated: false, value: "1" }],
      order: [],
      count: "exact",
    },
  );
});

Deno.test("parseReadQuery() errors are 400 bad_request", () => {
  try {
    parse("nope=eq.1");
    assert.fail("accepted");
  } catch (error) {
    assert.ok(error instanceof ApiError);
    assert.equal(error.toBody().error.type, "bad_request");
  }
});

Deno.test("parseReadQuery() round-trips any select list written with quotes", () => {
  const names = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), {
    minLength: 1,
    maxLength: 6,
    selector: (s) => s.toLowerCase(),
  });
  fc.assert(fc.property(names, (list) => {
    const columns = list.map((name) => ({ name, type: "VARCHAR" }));
    const text = list.map((n) => `"${n.replaceAll('"', '""')}"`).join(",");
    const query = parseReadQuery([["select", text]], columns);
    assert.deepEqual(query.select, list);
  }));
});

Deno.test("parseReadQuery() round-trips any in list written with quotes", () => {
  fc.assert(fc.property(fc.array(fc.string({ maxLength: 10 }), { maxLength: 6 }), (values) => {
    const text = `in.(${values.map((v) => `"${v.replaceAll('"', '""')}"`).join(",")})`;
    const { filters } = parseReadQuery([["id", text]], COLUMNS);
    assert.deepEqual(filters[0]?.value, values);
  }));
});

const SIGNATURE = orderSignature([{ column: "id", direction: "asc" }]);

Deno.test("orderSignature() tells apart direction and nulls", () => {
  const base = orderSignature([{ column: "a", direction: "asc" }]);
  assert.notEqual(base, orderSignature([{ column: "a", direction: "desc" }]));
  assert.notEqual(base, orderSignature([{ column: "a", direction: "asc", nulls: "last" }]));
  assert.notEqual(
    orderSignature([{ column: "a,b", direction: "asc" }]),
    orderSignature([{ column: "a", direction: "asc" }, { column: "b", direction: "asc" }]),
  );
});

Deno.test("encodeCursor() and decodeCursor() round-trip JSON values and bigints", () => {
  const value = fc.oneof(
    fc.string(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)),
    fc.boolean(),
    fc.constant(null),
    fc.bigInt(),
  );
  fc.assert(fc.property(fc.array(value, { maxLength: 5 }), fc.string(), (values, signature) => {
    assert.deepEqual(decodeCursor(encodeCursor(values, signature), signature), values);
  }));
});

Deno.test("encodeCursor() gives base64url text without padding", () => {
  assert.match(encodeCursor(["ÿÿÿ?>", 1], SIGNATURE), /^[A-Za-z0-9_-]+$/);
});

Deno.test("decodeCursor() refuses a cursor made for another order", () => {
  const cursor = encodeCursor([1], SIGNATURE);
  const other = orderSignature([{ column: "id", direction: "desc" }]);
  assert.throws(() => decodeCursor(cursor, other), (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, 400);
    assert.match(error.message, /cursor made for another order/);
    return true;
  });
});

Deno.test("decodeCursor() refuses text that is no cursor", () => {
  const b64 = (text: string) => btoa(text).replaceAll("=", "");
  for (
    const text of [
      "",
      "!!!",
      "a",
      "abc=",
      b64("not json"),
      b64("[1,2]"),
      b64('{"o":"x"}'),
      b64('{"o":1,"v":[]}'),
      b64('{"v":[]}'),
      b64("null"),
      "A".repeat(10_000),
    ]
  ) {
    assert.throws(() => decodeCursor(text, SIGNATURE), /not a cursor this service gave out/, text);
  }
});

Deno.test("decodeCursor() leaves a malformed bigint tag as an object", () => {
  const text = btoa(JSON.stringify({ o: SIGNATURE, v: [{ $bigint: "1e3" }] }))
    .replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
  assert.deepEqual(decodeCursor(text, SIGNATURE), [{ $bigint: "1e3" }]);
});
