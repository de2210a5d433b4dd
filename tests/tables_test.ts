import assert from "node:assert/strict";
import { ENGINE } from "./helpers/engine.ts";
import { errorOf, ok, snapshot, TestServer } from "./helpers/server.ts";

const users = {
  columns: [
    { name: "id", type: "bigserial" },
    { name: "email", type: "character varying(200)", is_nullable: false },
    { name: "Unit Price", type: "numeric(10,2)", default: "0" },
    { name: "created", type: "timestamp with time zone", default: "now()" },
    { name: "active", type: "boolean", default: "true" },
  ],
  constraints: { primary_key: { columns: ["id"] }, unique: [{ columns: ["email"] }] },
};

Deno.test("tables: create, get, list, delete over HTTP", async (t) => {
  const server = await TestServer.start();
  try {
    await t.step(
      "POST /table/{name} creates a table and answers it with ids and canonical types",
      async () => {
        const { table } = ok(
          await server.request("POST", "table/users", { body: { table: users } }),
        );
        assert.equal(table.name, "users");
        assert.equal(table.schema, "public");
        assert.deepEqual(table.columns.map((c: { id: number }) => c.id), [1, 2, 3, 4, 5]);
        // Each engine's canonical names (docs/api.md, "Types on PostgreSQL").
        assert.deepEqual(
          table.columns.map((c: { type: string }) => c.type),
          ENGINE === "duckdb"
            ? ["BIGINT", "VARCHAR", "DECIMAL(10,2)", "TIMESTAMP WITH TIME ZONE", "BOOLEAN"]
            : [
              "bigint",
              "character varying(200)",
              "numeric(10,2)",
              "timestamp with time zone",
              "boolean",
            ],
        );
        assert.match(table.columns[0].default, /^nextval\('public\.users_id_seq'\)$/);
        assert.equal(table.columns[0].is_nullable, false);
        assert.equal(table.columns[1].is_nullable, false);
        assert.equal(table.columns[2].default, "0");
        assert.equal(table.columns[3].default, "now()");
        assert.deepEqual(table.constraints, {
          primary_key: { name: "users_pkey", columns: ["id"] },
          unique: [{ name: "users_email_key", columns: ["email"] }],
          foreign_keys: [],
        });
      },
    );

    await t.step(
      "GET /table/{name} reads the same table back, names case-insensitively",
      async () => {
        const created = ok(await server.request("GET", "table/users"));
        const upper = ok(await server.request("GET", "table/USERS?schema=PUBLIC"));
        assert.deepEqual(upper, created);
        assert.equal(created.table.columns[2].name, "Unit Price");
      },
    );

    await t.step("a trailing slash is accepted", async () => {
      ok(await server.request("GET", "table/users/"));
      ok(await server.request("GET", "table/"));
      ok(await server.request("GET", "schema/"));
      ok(await server.request("POST", "schema/slashed/"));
      ok(await server.request("POST", "table/slashed/?schema=slashed", { body: {} }));
      ok(await server.request("POST", "table/slashed/records/?schema=slashed", { body: [{}] }));
      ok(
        await server.request("POST", "table/fromjson/upload/json/?schema=slashed", {
          body: { data: [{ a: 1 }] },
        }),
      );
      assert.equal(
        ok(await server.request("GET", "table/fromjson/records/?schema=slashed")).total,
        1,
      );
      ok(await server.request("GET", "table/fromjson/records/csv/?schema=slashed"));
      ok(await server.request("DELETE", "table/slashed/?schema=slashed"));
      ok(await server.request("DELETE", "schema/slashed/?cascade=true"));
    });

    await t.step(
      "creating an existing table is 409, or the table itself with if_not_exists",
      async () => {
        const error = errorOf(
          await server.request("POST", "table/Users", { body: { table: users } }),
          409,
        );
        assert.match(error.message, /already exists/);
        const again = ok(
          await server.request("POST", "table/users?if_not_exists=True", {
            body: { table: { columns: [] } },
          }),
        );
        assert.equal(again.table.columns.length, 5);
        errorOf(await server.request("POST", "table/users?if_not_exists=False", { body: {} }), 409);
        errorOf(await server.request("POST", "table/users?if_not_exists=maybe", { body: {} }), 400);
      },
    );

    await t.step("zero-column tables work, from {} and from an empty body", async () => {
      const empty = ok(await server.request("POST", "table/empty_one", { body: {} }));
      assert.deepEqual(empty.table.columns, []);
      const bare = ok(await server.request("POST", "table/empty_two"));
      assert.deepEqual(bare.table.columns, []);
      const nulls = ok(
        await server.request("POST", "table/empty_three", {
          body: { table: { columns: null, constraints: null } },
        }),
      );
      assert.deepEqual(nulls.table.constraints, {
        primary_key: null,
        unique: [],
        foreign_keys: [],
      });
    });

    await t.step("PostgreSQL spellings and DuckDB types are canonicalised", async () => {
      // [spelling, DuckDB's canonical name, PostgreSQL's]; a nested type PostgreSQL lacks is
      // 422 there, naming it (below).
      const all: [string, string, string | null][] = [
        ["integer", "INTEGER", "integer"],
        ["int4", "INTEGER", "integer"],
        ["smallint", "SMALLINT", "smallint"],
        ["double precision", "DOUBLE", "double precision"],
        ["real", "FLOAT", "real"],
        ["text", "VARCHAR", "text"],
        ["varchar(20)", "VARCHAR", "character varying(20)"],
        ["numeric", "DECIMAL(18,3)", "numeric"],
        ["timestamp", "TIMESTAMP", "timestamp without time zone"],
        ["timestamp without time zone", "TIMESTAMP", "timestamp without time zone"],
        ["timestamptz", "TIMESTAMP WITH TIME ZONE", "timestamp with time zone"],
        ["date", "DATE", "date"],
        ["time", "TIME", "time without time zone"],
        ["uuid", "UUID", "uuid"],
        ["json", "JSON", "json"],
        ["bytea", "BLOB", "bytea"],
        ["bigint[]", "BIGINT[]", "bigint[]"],
        ['STRUCT(a INTEGER, "b c" VARCHAR)', 'STRUCT(a INTEGER, "b c" VARCHAR)', null],
        ["MAP(VARCHAR, INTEGER)", "MAP(VARCHAR, INTEGER)", null],
        ["serial", "INTEGER", "integer"],
        ["smallserial", "SMALLINT", "smallint"],
      ];
      const spellings: [string, string][] = all.flatMap(([type, duck, postgres]) =>
        ENGINE === "duckdb" ? [[type, duck]] : postgres === null ? [] : [[type, postgres]]
      );
      if (ENGINE === "postgres") {
        for (const [type] of all.filter(([, , postgres]) => postgres === null)) {
          const error = errorOf(
            await server.request("POST", "table/nested", {
              body: { table: { columns: [{ name: "n", type }] } },
            }),
            422,
          );
          assert.match(
            error.message,
            /Column "n": Type "(STRUCT|MAP)\(.*\)" does not exist on PostgreSQL .*: use jsonb/,
          );
        }
      }
      const columns = spellings.map(([type], i) => ({ name: `c${i}`, type }));
      const { table } = ok(
        await server.request("POST", "table/typed", { body: { table: { columns } } }),
      );
      assert.deepEqual(
        table.columns.map((c: { type: string }) => c.type),
        spellings.map(([, canon]) => canon),
      );
    });

    await t.step("two serial columns of one table each get a sequence of their own", async () => {
      const { table } = ok(
        await server.request("POST", "table/counters", {
          body: {
            table: { columns: [{ name: "a", type: "serial" }, { name: "b", type: "serial8" }] },
          },
        }),
      );
      assert.notEqual(table.columns[0].default, table.columns[1].default);
    });

    await t.step(
      "foreign keys reference a primary key or unique column, with generated names",
      async () => {
        const { table } = ok(
          await server.request("POST", "table/orders", {
            body: {
              table: {
                columns: [
                  { name: "id", type: "integer" },
                  { name: "user_id", type: "bigint" },
                  { name: "buyer", type: "varchar" },
                  { name: "parent", type: "integer" },
                ],
                constraints: {
                  primary_key: { name: null, columns: ["id"] },
                  foreign_keys: [
                    {
                      name: null,
                      column: "user_id",
                      reference_table: "users",
                      reference_column: "id",
                      reference_schema: null,
                    },
                    {
                      name: "orders_buyer_email",
                      column: "buyer",
                      reference_table: "users",
                      reference_column: "email",
                    },
                    { column: "parent", reference_table: "orders", reference_column: "id" },
                  ],
                },
              },
            },
          }),
        );
        assert.deepEqual(table.constraints.foreign_keys, [
          {
            name: "orders_user_id_fkey",
            column: "user_id",
            reference_table: "users",
            reference_column: "id",
            reference_schema: "public",
          },
          {
            name: "orders_buyer_email",
            column: "buyer",
            reference_table: "users",
            reference_column: "email",
            reference_schema: "public",
          },
          {
            name: "orders_parent_fkey",
            column: "parent",
            reference_table: "orders",
            reference_column: "id",
            reference_schema: "public",
          },
        ]);
      },
    );

    await t.step(
      "a foreign key to a column that is not a key, or to a missing table, is 422",
      async () => {
        const before = await snapshot(server);
        for (
          const fk of [
            { column: "x", reference_table: "users", reference_column: "active" },
            { column: "x", reference_table: "nowhere", reference_column: "id" },
            { column: "x", reference_table: "users", reference_column: "nope" },
            { column: "nope", reference_table: "users", reference_column: "id" },
            {
              column: "x",
              reference_table: "users",
              reference_column: "id",
              reference_schema: "other",
            },
          ]
        ) {
          const answer = await server.request("POST", "table/bad_fk", {
            body: {
              table: {
                columns: [{ name: "x", type: "bigint" }],
                constraints: { foreign_keys: [fk] },
              },
            },
          });
          errorOf(answer, 422);
        }
        assert.equal(await snapshot(server), before);
      },
    );

    await t.step("deleting a table referenced by another table's foreign key is 409", async () => {
      const error = errorOf(await server.request("DELETE", "table/users"), 409);
      assert.match(error.message, /orders_user_id_fkey/);
      ok(await server.request("GET", "table/users"));
    });

    await t.step(
      "deleting tables in dependency order works and answers the contract's body",
      async () => {
        const dropped = ok(await server.request("DELETE", "table/orders"));
        assert.deepEqual(dropped, {
          message: 'Table "public.orders" deleted',
          table_name: "orders",
          schema: "public",
        });
        ok(await server.request("DELETE", "table/users"));
        errorOf(await server.request("GET", "table/users"), 404);
        errorOf(await server.request("DELETE", "table/users"), 404);
      },
    );

    await t.step(
      "a dropped table's name can be reused, its serial sequence starting afresh",
      async () => {
        const { table } = ok(
          await server.request("POST", "table/users", { body: { table: users } }),
        );
        assert.match(table.columns[0].default, /users_id_seq'\)$/);
        assert.deepEqual(table.columns.map((c: { id: number }) => c.id), [1, 2, 3, 4, 5]);
      },
    );

    await t.step("GET /table lists names, pages with offset/limit, and counts total", async () => {
      const all = ok(await server.request("GET", "table"));
      const names = all.tables.map((t: { name: string }) => t.name);
      assert.deepEqual(names, [...names].sort((a: string, b: string) => a.localeCompare(b)));
      assert.equal(all.total, names.length);
      assert.deepEqual(Object.keys(all.tables[0]).sort(), ["name", "rows_estimate", "schema"]);
      const page = ok(await server.request("GET", "table?offset=1&limit=2"));
      assert.deepEqual(page.tables.map((t: { name: string }) => t.name), names.slice(1, 3));
      assert.equal(page.total, all.total);
      const verbose = ok(await server.request("GET", "table?verbose=1&limit=1"));
      assert.ok(Array.isArray(verbose.tables[0].columns));
      const beyond = ok(await server.request("GET", "table?offset=1000"));
      assert.deepEqual(beyond, { tables: [], total: all.total });
      ok(await server.request("GET", "table?offset=1000000000000000"));
      for (
        const bad of [
          "limit=-1",
          "limit=abc",
          "offset=1.5",
          "limit=1001",
          "verbose=yes",
          "offset=99999999999999999",
        ]
      ) {
        errorOf(await server.request("GET", `table?${bad}`), 400);
      }
    });

    await t.step(
      "tables in other schemas: create, list by schema, 404 for a missing schema",
      async () => {
        ok(await server.request("POST", "schema/sales"));
        ok(await server.request("POST", "table/items?schema=sales", { body: { table: users } }));
        const listed = ok(await server.request("GET", "table?schema=sales"));
        assert.deepEqual(listed, {
          tables: [{ name: "items", schema: "sales", rows_estimate: 0 }],
          total: 1,
        });
        const all = ok(await server.request("GET", "table"));
        assert.ok(all.tables.some((t: { schema: string }) => t.schema === "sales"));
        errorOf(await server.request("GET", "table?schema=nowhere"), 404);
        errorOf(await server.request("GET", "table/items?schema=nowhere"), 404);
        errorOf(await server.request("POST", "table/items?schema=nowhere", { body: {} }), 404);
        errorOf(await server.request("GET", "table/items"), 404);
      },
    );

    await t.step("defaults are validated as exactly one scalar expression", async () => {
      const before = await snapshot(server);
      const good: [string, string][] = [
        ["'abc'", "varchar"],
        ["42", "integer"],
        ["now()", "timestamp"],
        [
          "1 + 2 * 3",
          "bigint",
        ],
        ["current_date", "date"],
        ["'x' || 'y'", "varchar"],
        ["gen_random_uuid()", "uuid"],
      ];
      for (const [expression, type] of good) {
        const name = `d_${crypto.randomUUID().slice(0, 8)}`;
        ok(
          await server.request("POST", `table/${name}`, {
            body: { table: { columns: [{ name: "c", type, default: expression }] } },
          }),
        );
        ok(await server.request("DELETE", `table/${name}`));
      }
      const bad: [string, string][] = [
        ["1; DROP TABLE users", "integer"],
        ["(SELECT 1)", "integer"],
        ["1 FROM users", "integer"],
        ["*", "integer"],
        ["c", "integer"],
        ["$1", "integer"],
        ["1, 2", "integer"],
        ["1 AS x", "integer"],
        ["sum(1)", "integer"],
        ["'abc'", "integer"],
        ["", "integer"],
        ["1 WHERE true", "integer"],
        ["1 UNION SELECT 2", "integer"],
        ["row_number() OVER ()", "integer"],
        ["nextval('no_such_sequence')", "bigint"],
        ["1 -- \n, evil integer", "integer"],
        ["'unterminated", "varchar"],
        ["nextval('public.users_id_seq')", "bigint"],
        ["nextval('_table_service.table_ids')", "bigint"],
        ["currval('public.users_id_seq')", "bigint"],
        ["current_setting('temp_directory')", "varchar"],
        ["length(repeat('x', 200000000))", "bigint"],
        ["main.now()", "timestamp"],
        ["list_transform([1], x -> x)", "integer[]"],
      ];
      for (const [expression, type] of bad) {
        const answer = await server.request("POST", "table/bad_default", {
          body: { table: { columns: [{ name: "c", type, default: expression }] } },
        });
        const error = errorOf(answer, 422);
        assert.ok(error.message.length > 0, `default ${expression}`);
        assert.doesNotMatch(answer.text, /\/tmp\/|table-service-test/, "no file paths in errors");
      }
      assert.equal(await snapshot(server), before);
    });

    await t.step("generated constraint names that collide get a number", async () => {
      const long = "t".repeat(50);
      const { table } = ok(
        await server.request("POST", `table/${long}`, {
          body: {
            table: {
              columns: [{ name: "customer_code_1", type: "int" }, {
                name: "customer_code_2",
                type: "int",
              }],
              constraints: {
                unique: [{ columns: ["customer_code_1"] }, { columns: ["customer_code_2"] }],
              },
            },
          },
        }),
      );
      const names = table.constraints.unique.map((u: { name: string }) => u.name);
      assert.equal(new Set(names.map((n: string) => n.toLowerCase())).size, 2);
      assert.ok(names.every((n: string) => [...n].length <= 63));
      ok(await server.request("DELETE", `table/${long}`));
    });

    await t.step("a comment in a default cannot swallow the rest of the definition", async () => {
      const { table } = ok(
        await server.request("POST", "table/commented", {
          body: {
            table: {
              columns: [{ name: "a", type: "integer", default: "1 -- comment" }, {
                name: "b",
                type: "integer",
                is_nullable: false,
              }],
            },
          },
        }),
      );
      assert.equal(table.columns[0].default, "1");
      assert.equal(table.columns[1].is_nullable, false);
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("tables: invalid definitions are 422 and change nothing", async () => {
  const server = await TestServer.start();
  try {
    ok(await server.request("POST", "table/base", { body: { table: users } }));
    const before = await snapshot(server);
    const cases: Record<string, unknown> = {
      "unknown type": { columns: [{ name: "a", type: "no_such_type" }] },
      "type with a second column": { columns: [{ name: "a", type: "int, b int" }] },
      "type with a constraint": { columns: [{ name: "a", type: "int primary key" }] },
      "type with a statement": { columns: [{ name: "a", type: "int); drop table base; --" }] },
      "type with a default": { columns: [{ name: "a", type: "int default 1" }] },
      "empty type": { columns: [{ name: "a", type: "" }] },
      "duplicate column": { columns: [{ name: "a", type: "int" }, { name: "A", type: "int" }] },
      "column name with control character": { columns: [{ name: "a\u0001", type: "int" }] },
      "column name with newline": { columns: [{ name: "a\nb", type: "int" }] },
      "column name with RTL mark": { columns: [{ name: "a\u200fb", type: "int" }] },
      "column name too long": { columns: [{ name: "x".repeat(64), type: "int" }] },
      "column name with spaces around": { columns: [{ name: " a", type: "int" }] },
      "empty column name": { columns: [{ name: "", type: "int" }] },
      "primary key on unknown column": {
        columns: [{ name: "a", type: "int" }],
        constraints: { primary_key: { columns: ["b"] } },
      },
      "unique on unknown column": {
        columns: [{ name: "a", type: "int" }],
        constraints: { unique: [{ columns: ["a", "zz"] }] },
      },
      "empty primary key": {
        columns: [{ name: "a", type: "int" }],
        constraints: { primary_key: { columns: [] } },
      },
      "duplicate constraint names": {
        columns: [{ name: "a", type: "int" }, { name: "b", type: "int" }],
        constraints: { unique: [{ name: "k", columns: ["a"] }, { name: "K", columns: ["b"] }] },
      },
      "constraint name with control character": {
        columns: [{ name: "a", type: "int" }],
        constraints: { unique: [{ name: "k\u0000", columns: ["a"] }] },
      },
      "unique repeating the primary key": {
        columns: [{ name: "a", type: "int" }],
        constraints: { primary_key: { columns: ["a"] }, unique: [{ columns: ["a"] }] },
      },
      "serial with a default": { columns: [{ name: "a", type: "serial", default: "1" }] },
      "foreign key reference table injection": {
        columns: [{ name: "a", type: "int" }],
        constraints: {
          foreign_keys: [{
            column: "a",
            reference_table: "base(id); drop table base; --",
            reference_column: "id",
          }],
        },
      },
      "foreign key reference schema injection": {
        columns: [{ name: "a", type: "int" }],
        constraints: {
          foreign_keys: [{
            column: "a",
            reference_table: "base",
            reference_column: "id",
            reference_schema: 'x"y',
          }],
        },
      },
      "too many columns": {
        columns: Array.from({ length: 2001 }, (_, i) => ({ name: `c${i}`, type: "int" })),
      },
    };
    for (const [label, table] of Object.entries(cases)) {
      const answer = await server.request("POST", "table/victim", { body: { table } });
      assert.equal(answer.status, 422, `${label}: ${answer.text}`);
      errorOf(answer, 422);
    }
    assert.equal(await snapshot(server), before);
  } finally {
    await server.dispose();
  }
});

Deno.test("tables: wrong JSON shapes and invalid names are 400 and change nothing", async () => {
  const server = await TestServer.start();
  try {
    const before = await snapshot(server);
    const shapes: unknown[] = [
      [],
      "table",
      42,
      { table: [] },
      { table: { columns: {} } },
      { table: { columns: [{ name: 1, type: "int" }] } },
      { table: { columns: [{ name: "a" }] } },
      { table: { columns: [{ name: "a", type: "int", is_nullable: "no" }] } },
      { table: { columns: [{ name: "a", type: "int", default: 5 }] } },
      { table: { constraints: { primary_key: { columns: "a" } } } },
      { table: { constraints: { unique: [{ columns: [1] }] } } },
      { table: { constraints: { foreign_keys: [{ column: "a" }] } } },
    ];
    for (const body of shapes) {
      const answer = await server.request("POST", "table/victim", {
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      });
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
      errorOf(answer, 400);
    }
    const names = [
      "1abc",
      "a-b",
      "a b",
      "x".repeat(64),
      "users;drop",
      "%27%3B%20DROP%20TABLE%20x",
      "..%2F..%2Fetc",
      "a%00b",
      "a%E2%80%8Fb",
      "caf%C3%A9",
    ];
    for (const name of names) {
      errorOf(await server.request("POST", `table/${name}`, { body: {} }), 400);
      errorOf(await server.request("GET", `table/${name}`), 400);
      errorOf(await server.request("DELETE", `table/${name}`), 400);
      errorOf(await server.request("GET", `table/ok?schema=${name}`), 400);
      errorOf(await server.request("POST", `schema/${name}`), 400);
    }
    for (
      const reserved of [
        "main",
        "_table_service",
        "information_schema",
        "pg_catalog",
        "MAIN",
        "tables",
      ]
    ) {
      errorOf(await server.request("GET", `table/tables?schema=${reserved}`), 400);
      errorOf(await server.request("POST", `table/x?schema=${reserved}`, { body: {} }), 400);
      errorOf(await server.request("GET", `table?schema=${reserved}`), 400);
    }
    ok(await server.request("POST", `table/${"x".repeat(63)}`, { body: {} }));
    ok(await server.request("DELETE", `table/${"x".repeat(63)}`));
    assert.equal(await snapshot(server), before);
  } finally {
    await server.dispose();
  }
});

Deno.test(
  `tables: a column name of 40 characters and 80 bytes ${
    ENGINE === "postgres"
      ? "is 422 naming PostgreSQL's 63 bytes on every route that makes columns, and changes nothing"
      : "is kept whole"
  }`,
  async () => {
    const server = await TestServer.start();
    try {
      const long = "é".repeat(40);
      const column = { name: long, type: "integer" };
      ok(await server.request("POST", "table/short", { body: { table: { columns: [] } } }));
      const before = await snapshot(server);
      const attempts: [string, string, unknown][] = [
        ["POST", "table/wide", { table: { columns: [column] } }],
        ["PUT", "table/short", { table: { columns: [column] } }],
        ["POST", "table/inferred/upload/json", { data: [{ [long]: 1 }] }],
      ];
      for (const [method, path, body] of attempts) {
        const answer = await server.request(method, path, { body });
        if (ENGINE === "postgres") {
          const error = errorOf(answer, 422);
          assert.match(
            error.message,
            /Column name "é+" is 80 bytes of UTF-8; at most 63 are allowed on this storage engine/,
          );
          assert.equal((error.details?.[0] as { column: string }).column, long);
          assert.equal(await snapshot(server), before);
        } else {
          assert.ok(answer.status < 300, `${method} ${path}: ${answer.text}`);
          const table = path.split("/")[1];
          const { records } = ok(await server.request("GET", `table/${table}/records`));
          const got = ok(await server.request("GET", `table/${table}`));
          assert.deepEqual(got.table.columns.map((c: { name: string }) => c.name), [long]);
          assert.equal(records.length, method === "POST" && path.includes("upload") ? 1 : 0);
        }
      }
    } finally {
      await server.dispose();
    }
  },
);
