/**
 * The catalog clients read over the PostgreSQL protocol, emulated and confined to the token's
 * schemas, on the engine the tests run on: psql's `\dt`, `\dn`, `\l` and `\d`,
 * `information_schema`, SQLAlchemy's inspector and pgJDBC's DatabaseMetaData. Two tokens with
 * different `schemas` claims see disjoint catalogs. A client that is not installed is skipped,
 * unless `REQUIRE_PGWIRE_CLIENTS` is set.
 */

import assert from "node:assert/strict";
import { mint, ok, TestServer } from "./helpers/server.ts";
import { installed, pgClient, pgwirePort, REQUIRED } from "./helpers/pgwire.ts";
import { DBEAVER, GRAFANA, METABASE } from "./fixtures/pgwire/bi_tools.ts";

interface FixtureTable {
  readonly schema: string;
  readonly name: string;
  readonly columns: { name: string; type: string; is_nullable?: boolean }[];
  readonly constraints: Record<string, unknown>;
}

const TABLES: FixtureTable[] = [
  {
    schema: "sales",
    name: "customers",
    columns: [{ name: "id", type: "integer", is_nullable: false }, { name: "name", type: "text" }],
    constraints: { primary_key: { columns: ["id"] } },
  },
  {
    schema: "sales",
    name: "orders",
    columns: [
      { name: "id", type: "integer", is_nullable: false },
      { name: "customer", type: "integer" },
      { name: "amount", type: "numeric(10,2)" },
      { name: "placed", type: "timestamp with time zone" },
    ],
    constraints: {
      primary_key: { columns: ["id"] },
      foreign_keys: [{
        column: "customer",
        reference_table: "customers",
        reference_column: "id",
        reference_schema: "sales",
      }],
    },
  },
  {
    schema: "hr",
    name: "salaries",
    columns: [
      { name: "id", type: "integer", is_nullable: false },
      { name: "who", type: "text" },
      { name: "salary", type: "integer" },
    ],
    constraints: { primary_key: { columns: ["id"] } },
  },
];

async function run(command: string, args: string[], env: Record<string, string> = {}) {
  const output = await new Deno.Command(command, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

function visible(schema: string) {
  return TABLES.filter((t) => t.schema === schema);
}

Deno.test("the emulated catalog shows each token its own schemas, to psql, SQLAlchemy and pgJDBC", async (t) => {
  const server = await TestServer.start();
  try {
    for (const schema of ["sales", "hr"]) ok(await server.request("POST", `schema/${schema}`));
    for (const table of TABLES) {
      ok(
        await server.request("POST", `table/${table.name}?schema=${table.schema}`, {
          body: { table: { columns: table.columns, constraints: table.constraints } },
        }),
      );
    }
    const described = new Map<string, { constraints: { primary_key: { name: string } } }>();
    for (const table of TABLES) {
      described.set(
        `${table.schema}.${table.name}`,
        ok(await server.request("GET", `table/${table.name}?schema=${table.schema}`)).table,
      );
    }
    const tokens = {
      sales: await mint({ scope: "tables:read", schemas: ["sales"] }),
      hr: await mint({ scope: "tables:read", schemas: ["hr"] }),
    };
    const port = pgwirePort(server);

    await t.step("a catalog query runs as one SELECT: none can change the catalog", async () => {
      const client = await pgClient(server, tokens.sales);
      try {
        // An escape string whose escaped quotes hide an array literal: respelled as if that
        // literal stood outside the string, the text would end early and run the DROP after.
        const smuggled = "SELECT relname FROM pg_catalog.pg_class WHERE relname = " +
          String.raw`E'\' x \'{ || }'::text[] OR relname = ') AS d; ` +
          "DROP TABLE wire_pg.pg_namespace; SELECT * FROM (SELECT 1 --'\n";
        const namespaces = async () =>
          (await client.query(
            "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname = 'sales'",
          )).rows;
        await client.query(smuggled).catch(() => {});
        assert.deepEqual(await namespaces(), [{ nspname: "sales" }]);
        for (
          const bad of [
            "SELECT 1 FROM pg_catalog.pg_class; DROP TABLE wire_pg.pg_namespace",
            "SELECT $$x$$ FROM pg_catalog.pg_class",
          ]
        ) {
          await assert.rejects(client.query({ text: bad, values: [] }), bad);
        }
        assert.deepEqual(await namespaces(), [{ nspname: "sales" }]);
      } finally {
        await client.end();
      }
    });

    await t.step("a catalog query reads the session's settings as SET left them", async () => {
      const client = await pgClient(server);
      const read = async (name: string) => {
        const { rows } = await client.query(
          `SELECT current_setting('${name}') AS value, ` +
            `(SELECT setting FROM pg_catalog.pg_settings WHERE name = '${name}') AS setting`,
        );
        return rows[0];
      };
      try {
        assert.deepEqual(await read("search_path"), { value: "public", setting: "public" });
        await client.query("SET search_path = hr");
        await client.query("SET application_name = 'dashboards'");
        await client.query("SET statement_timeout = '5s'");
        assert.deepEqual(await read("search_path"), { value: "hr", setting: "hr" });
        assert.deepEqual(await read("application_name"), {
          value: "dashboards",
          setting: "dashboards",
        });
        // Sessions share the emulated catalog, not their settings.
        const other = await pgClient(server);
        try {
          await other.query("SET application_name = 'notebooks'");
          const { rows } = await other.query(
            "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'application_name'",
          );
          assert.deepEqual(rows, [{ setting: "notebooks" }]);
          assert.deepEqual(await read("application_name"), {
            value: "dashboards",
            setting: "dashboards",
          });
        } finally {
          await other.end();
        }
        // As PostgreSQL shows a duration: SHOW in the largest whole unit, pg_settings in its
        // unit, milliseconds.
        const { rows: [shown] } = await client.query("SHOW statement_timeout");
        assert.equal(shown.statement_timeout, "5s");
        assert.deepEqual(await read("statement_timeout"), { value: "5s", setting: "5000" });
        const { rows: [unit] } = await client.query(
          "SELECT unit FROM pg_catalog.pg_settings WHERE name = 'statement_timeout'",
        );
        assert.deepEqual(unit, { unit: "ms" });
        await client.query("RESET ALL");
        assert.deepEqual(await read("search_path"), { value: "public", setting: "public" });
      } finally {
        await client.end();
      }
    });

    await t.step("information_schema and pg_catalog hold each token's tables alone", async () => {
      const seen: Record<string, Set<string>> = {};
      for (const [schema, token] of Object.entries(tokens)) {
        const client = await pgClient(server, token);
        try {
          const { rows } = await client.query(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns " +
              "ORDER BY table_schema, table_name, ordinal_position",
          );
          seen[schema] = new Set(rows.map((r) => `${r.table_schema}.${r.table_name}`));
          assert.deepEqual(
            rows.map((r) => `${r.table_schema}.${r.table_name}.${r.column_name}`),
            visible(schema).sort((a, b) => a.name < b.name ? -1 : 1).flatMap((t) =>
              t.columns.map((c) => `${t.schema}.${t.name}.${c.name}`)
            ),
          );
          const namespaces = await client.query(
            "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname !~ '^pg_' " +
              "AND nspname <> 'information_schema' ORDER BY 1",
          );
          assert.deepEqual(namespaces.rows.map((r) => r.nspname), [schema]);
          const classes = await client.query(
            "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n " +
              "ON n.oid = c.relnamespace WHERE c.relkind = 'r' ORDER BY 1",
          );
          assert.deepEqual(
            classes.rows.map((r) => r.relname),
            visible(schema).map((t) => t.name).sort(),
          );
          const version = await client.query("SELECT version()");
          assert.match(version.rows[0].version, /^PostgreSQL 15\./);
        } finally {
          await client.end();
        }
      }
      const overlap = [...seen.sales!].filter((name) => seen.hr!.has(name));
      assert.deepEqual(overlap, []);
    });

    await t.step("psql's \\dt, \\dn, \\l and \\d", async (t) => {
      if (!installed("/usr/bin/psql")) {
        await t.step({ name: "psql is not installed", ignore: true, fn: () => {} });
        return;
      }
      const conn = `host=127.0.0.1 port=${port} user=analyst dbname=tables sslmode=disable`;
      const psql = (token: string, command: string) =>
        run("psql", [conn, "-X", "-A", "-t", "-F", "|", "-c", command], { PGPASSWORD: token });
      for (const [schema, token] of Object.entries(tokens)) {
        const tables = await psql(token, "\\dt");
        assert.equal(tables.code, 0, tables.stderr);
        assert.deepEqual(
          tables.stdout.trim().split("\n").map((line) => line.split("|").slice(0, 3).join("|")),
          visible(schema).map((t) => `${t.schema}|${t.name}|table`).sort(),
        );
        const schemas = await psql(token, "\\dn");
        assert.equal(schemas.code, 0, schemas.stderr);
        assert.deepEqual(schemas.stdout.trim().split("\n").map((line) => line.split("|")[0]), [
          schema,
        ]);
        const other = schema === "sales" ? "hr" : "sales";
        const hidden = await psql(token, `\\dt ${other}.*`);
        assert.equal(hidden.stdout.trim(), "");
        assert.match(hidden.stderr, /Did not find any relation/);
      }
      const databases = await psql(tokens.sales, "\\l");
      assert.equal(databases.code, 0, databases.stderr);
      assert.match(databases.stdout, /^tables\|/m);
      // With footers (not -t), where psql lists the indexes.
      const orders = await run("psql", [conn, "-X", "-A", "-F", "|", "-c", "\\d sales.orders"], {
        PGPASSWORD: tokens.sales,
      });
      assert.equal(orders.code, 0, orders.stderr);
      const table = TABLES.find((t) => t.name === "orders")!;
      for (const column of table.columns) {
        assert.match(orders.stdout, new RegExp(`^${column.name}\\|`, "m"));
      }
      assert.match(orders.stdout, /^id\|integer\|\|not null\|/m);
      assert.match(orders.stdout, /^amount\|numeric\(10,2\)\|/m);
      const key = described.get("sales.orders")!.constraints.primary_key.name;
      assert.ok(orders.stdout.includes(`"${key}" PRIMARY KEY, btree (id)`), orders.stdout);
      assert.match(
        orders.stdout,
        /Foreign-key constraints:\n\s*"[^"]+" FOREIGN KEY \(customer\) REFERENCES customers\(id\)/,
      );
      const customers = await run("psql", [conn, "-X", "-A", "-c", "\\d sales.customers"], {
        PGPASSWORD: tokens.sales,
      });
      assert.equal(customers.code, 0, customers.stderr);
      assert.match(
        customers.stdout,
        /Referenced by:\n\s*TABLE "orders" CONSTRAINT "[^"]+" FOREIGN KEY \(customer\)/,
      );
    });

    await t.step(
      "psql's other listings answer as on a database without such objects",
      async (t) => {
        if (!installed("/usr/bin/psql")) {
          await t.step({ name: "psql is not installed", ignore: true, fn: () => {} });
          return;
        }
        const conn = `host=127.0.0.1 port=${port} user=analyst dbname=tables sslmode=disable`;
        const psql = (command: string) =>
          run("psql", [conn, "-X", "-A", "-t", "-F", "|", "-c", command], {
            PGPASSWORD: tokens.sales,
          });
        const answers: Record<string, string> = {};
        for (const command of ["\\du", "\\df", "\\dv", "\\di", "\\dt+", "\\l+", "\\dconfig"]) {
          const answer = await psql(command);
          assert.equal(answer.code, 0, `${command}: ${answer.stderr}`);
          answers[command] = answer.stdout.trim();
        }
        assert.match(answers["\\du"]!, /^analyst\|/);
        assert.equal(answers["\\df"], "");
        const key = described.get("sales.orders")!.constraints.primary_key.name;
        assert.match(
          answers["\\di"]!,
          new RegExp(`^sales\\|${key}\\|index\\|analyst\\|orders$`, "m"),
        );
        assert.match(answers["\\dt+"]!, /^sales\|orders\|table\|analyst\|permanent\|heap\|/m);
        assert.match(answers["\\l+"]!, /^tables\|analyst\|UTF8\|/m);
        assert.match(answers["\\dconfig"]!, /^search_path\|sales$/m);
      },
    );

    for (
      const [tool, queries] of Object.entries({
        Grafana: GRAFANA,
        DBeaver: DBEAVER,
        Metabase: METABASE,
      })
    ) {
      await t.step(
        `the catalog queries ${tool} sends to connect and to list what it can read`,
        async () => {
          const client = await pgClient(server, tokens.sales);
          try {
            for (const query of queries) {
              const result = await client.query({
                text: query.sql,
                values: [...query.params ?? []],
                rowMode: "array",
              });
              const at = result.fields.map((f) => f.name);
              const columns = query.pick?.map((name) => {
                assert.ok(
                  at.includes(name),
                  `${query.what}: no column ${name} in ${at.join(", ")}`,
                );
                return at.lastIndexOf(name);
              }) ?? at.map((_, i) => i);
              const texts = (result.rows as unknown[][]).map((row) =>
                columns.map((i) => row[i] === null ? null : String(row[i]))
              );
              const sorted = (list: (string | null)[][]) =>
                query.unordered ? [...list].sort((a, b) => String(a) < String(b) ? -1 : 1) : list;
              assert.deepEqual(sorted(texts), sorted(query.rows.map((r) => [...r])), query.what);
            }
          } finally {
            await client.end();
          }
        },
      );
    }

    await t.step("SQLAlchemy's inspector: tables, columns, primary and foreign keys", async (t) => {
      const check = await run("/usr/bin/python3", ["-c", "import sqlalchemy, psycopg2"]).catch(
        () => ({ code: 1 }),
      );
      if (check.code !== 0) {
        if (REQUIRED) throw new Error("python3-sqlalchemy or python3-psycopg2 is missing");
        await t.step({ name: "SQLAlchemy is not installed", ignore: true, fn: () => {} });
        return;
      }
      const script = new URL("./fixtures/pgwire/sqlalchemy_inspector.py", import.meta.url).pathname;
      const result = await run("/usr/bin/python3", [script, String(port), tokens.sales]);
      assert.equal(result.code, 0, result.stderr);
      const seen = JSON.parse(result.stdout);
      assert.deepEqual(
        Object.keys(seen.tables).sort(),
        visible("sales").map((t) => `sales.${t.name}`).sort(),
      );
      for (const table of visible("sales")) {
        const inspected = seen.tables[`sales.${table.name}`];
        assert.deepEqual(
          inspected.columns.map((c: [string]) => c[0]),
          table.columns.map((c) => c.name),
        );
        assert.deepEqual(
          inspected.columns.map((c: [string, string, boolean]) => c[2]),
          table.columns.map((c) => c.is_nullable !== false),
        );
        assert.deepEqual(inspected.primary_key, ["id"]);
      }
      assert.deepEqual(
        seen.tables["sales.orders"].foreign_keys.map((f: unknown[]) => [f[0], f[2], f[3]]),
        [
          [["customer"], "customers", ["id"]],
        ],
      );
      assert.deepEqual(
        seen.tables["sales.orders"].columns.find((c: string[]) => c[0] === "amount")[1],
        "NUMERIC(10, 2)",
      );
    });

    await t.step("pgJDBC's DatabaseMetaData: getTables, getColumns, getPrimaryKeys", async (t) => {
      if (!installed("/usr/share/java/postgresql.jar") || !installed("/usr/bin/javac")) {
        await t.step({ name: "pgJDBC or a JDK is not installed", ignore: true, fn: () => {} });
        return;
      }
      const source = new URL("./fixtures/pgwire/JdbcMeta.java", import.meta.url).pathname;
      for (const [schema, token] of Object.entries(tokens)) {
        const result = await run("/usr/bin/java", [
          "-cp",
          "/usr/share/java/postgresql.jar",
          source,
          String(port),
          token,
        ]);
        assert.equal(result.code, 0, result.stderr);
        const lines = result.stdout.trim().split("\n");
        assert.deepEqual(
          lines.filter((l) => l.startsWith("table ")),
          visible(schema).map((t) => `table ${t.schema}.${t.name}`).sort(),
        );
        assert.deepEqual(
          lines.filter((l) => l.startsWith("column ")).map((l) => l.split(" ")[1]),
          visible(schema).sort((a, b) => a.name < b.name ? -1 : 1).flatMap((t) =>
            t.columns.map((c) => `${t.schema}.${t.name}.${c.name}`)
          ),
        );
        assert.deepEqual(
          lines.filter((l) => l.startsWith("key ")),
          visible(schema).map((t) =>
            `key ${t.schema}.${t.name}.id ${
              described.get(`${t.schema}.${t.name}`)!.constraints.primary_key.name
            }`
          ).sort(),
        );
        const id = lines.find((l) => l.startsWith(`column ${schema}.`) && l.includes(".id "));
        assert.match(id!, / int4 4 NO$/);
      }
    });
  } finally {
    await server.dispose();
  }
});
