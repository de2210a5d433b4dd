/**
 * Real clients against the PostgreSQL protocol listener, on the engine the tests run on:
 * psql, psycopg2, psycopg 3 (text, binary, a statement prepared and run ten times),
 * SQLAlchemy with pandas, npm:postgres and pgJDBC. Each reads rows the test loaded and says
 * what it read; the test compares. A client that is not installed is skipped, unless
 * `REQUIRE_PGWIRE_CLIENTS` is set (as `.ci/run` does after installing them).
 */

import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import postgres from "npm:postgres@3.4.9";
import { mint, ok, TestServer } from "./helpers/server.ts";
import { installed, pgwirePort, REQUIRED } from "./helpers/pgwire.ts";

const ROW_COUNT = 10_000;

/** The rows loaded: made up here, so every expectation is computed from them. */
const ROWS = Array.from({ length: ROW_COUNT }, (_, i) => ({
  id: i + 1,
  amount: ((i * 37) % 100_000 / 100 - 250).toFixed(2),
  moment: new Date(Date.UTC(2024, 0, 1, 0, 0, 0) + i * 61_000 + (i % 1000)).toISOString(),
  label: i % 7 === 0 ? null : `label ${i} "quoted", {braced}`,
  flag: i % 3 === 0,
  ratio: i / 16,
  tags: i % 4 === 0 ? [] : [`t${i % 5}`, "x y"],
  big: String(2n ** 50n + BigInt(i)),
}));

const COLUMNS = [
  ["id", "integer"],
  ["amount", "numeric(12,2)"],
  ["moment", "timestamp with time zone"],
  ["label", "text"],
  ["flag", "boolean"],
  ["ratio", "double precision"],
  ["tags", "text[]"],
  ["big", "bigint"],
];

/** An array of text as PostgreSQL writes it: an element quoted only when it must be. */
function pgArray(items: readonly string[]): string {
  const quoted = (item: string) =>
    item === "" || /[{}",\\\s]/.test(item) || item.toUpperCase() === "NULL"
      ? `"${item.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`
      : item;
  return `{${items.map(quoted).join(",")}}`;
}

/** Reports a step skipped, with the reason as its name. */
async function skipped(t: Deno.TestContext, why: string): Promise<void> {
  await t.step({ name: why, ignore: true, fn: () => {} });
}

async function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const output = await new Deno.Command(command, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  const decoder = new TextDecoder();
  assert.equal(
    output.code,
    0,
    `${command} failed:\n${decoder.decode(output.stderr)}${decoder.decode(output.stdout)}`,
  );
  return decoder.decode(output.stdout);
}

async function fixture(env: Record<string, string> = {}): Promise<TestServer> {
  const server = await TestServer.start({ QUERY_TIMEOUT_SECONDS: "20", ...env });
  const columns = COLUMNS.map(([name, type]) => ({ name, type }));
  ok(await server.request("POST", "table/items", { body: { table: { columns } } }));
  for (let i = 0; i < ROWS.length; i += 2_500) {
    ok(await server.request("POST", "table/items/records", { body: ROWS.slice(i, i + 2_500) }));
  }
  return server;
}

/** The total of the amounts, in cents, exactly. */
function totalCents(): bigint {
  return ROWS.reduce((sum, row) => sum + BigInt(Math.round(Number(row.amount) * 100)), 0n);
}

function cents(text: string): bigint {
  const [whole, fraction = ""] = text.replace("-", "").split(".");
  const value = BigInt(whole!) * 100n + BigInt(fraction.padEnd(2, "0").slice(0, 2));
  return text.startsWith("-") ? -value : value;
}

Deno.test("real clients read the rows back over the PostgreSQL protocol", async (t) => {
  const server = await fixture();
  const port = pgwirePort(server);
  const token = await mint({ scope: "tables:read" });
  try {
    await t.step("psql: rows, an error's SQLSTATE, and a transaction", async (t) => {
      if (!installed("/usr/bin/psql")) return await skipped(t, "psql is not installed");
      const env = { PGPASSWORD: token, PGCONNECT_TIMEOUT: "10" };
      const conn = `host=127.0.0.1 port=${port} user=analyst dbname=tables sslmode=disable`;
      const text = await run("psql", [
        conn,
        "-X",
        "-A",
        "-t",
        "-F",
        "|",
        "-c",
        "SELECT id, label, flag, tags FROM items WHERE id <= 3 ORDER BY id",
      ], env);
      const expected = ROWS.slice(0, 3).map((r) =>
        `${r.id}|${r.label ?? ""}|${r.flag ? "t" : "f"}|${pgArray(r.tags)}`
      );
      assert.deepEqual(text.trim().split("\n"), expected);
      const script = [
        "\\set VERBOSITY verbose",
        "BEGIN;",
        "SELECT count(*) FROM items;",
        "SELECT * FROM nowhere;",
        "SELECT 1;",
        "ROLLBACK;",
        "SELECT count(*) FROM items WHERE flag;",
      ].join("\n");
      const output = await new Deno.Command("psql", {
        args: [conn, "-X", "-A", "-t"],
        env,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = output.stdin.getWriter();
      await writer.write(new TextEncoder().encode(script));
      await writer.close();
      const result = await output.output();
      const out = new TextDecoder().decode(result.stdout);
      const err = new TextDecoder().decode(result.stderr);
      assert.match(err, /42P01/);
      assert.match(err, /25P02/);
      assert.deepEqual(out.trim().split("\n").filter((l) => /^\d+$/.test(l)), [
        String(ROWS.length),
        String(ROWS.filter((r) => r.flag).length),
      ]);
    });

    await t.step("psycopg2, psycopg 3 and SQLAlchemy with pandas", async (t) => {
      if (!installed("/usr/bin/python3")) return await skipped(t, "python3 is not installed");
      const check = await new Deno.Command("/usr/bin/python3", {
        args: ["-c", "import psycopg, psycopg2, sqlalchemy, pandas"],
        stderr: "null",
      }).output();
      if (check.code !== 0) {
        if (REQUIRED) {
          throw new Error("python3-psycopg, -psycopg2, -sqlalchemy or -pandas is missing");
        }
        return await skipped(t, "the Python clients are not installed");
      }
      const script = new URL("./fixtures/pgwire/python_clients.py", import.meta.url).pathname;
      const out = JSON.parse(await run("/usr/bin/python3", [script, String(port), token]));
      const row5 = ROWS[4]!;
      // id, amount, moment, label, flag, ratio, tags, big as Python gives them.
      const python = (row: typeof row5) => [
        row.id,
        row.amount,
        row.moment.replace("T", " ").replace(/Z$/, "+00:00").replace(/\.(\d{3})/, ".$1000"),
        row.label,
        row.flag,
        row.ratio,
        row.tags,
        Number(row.big),
      ];
      assert.deepEqual(out.psycopg2, python(row5));
      assert.deepEqual(out.psycopg_text, python(row5));
      assert.deepEqual(out.psycopg_binary, python(row5));
      assert.equal(out.psycopg_prepared_distinct, 1);
      assert.deepEqual(out.psycopg_prepared, python(ROWS[8]!));
      assert.equal(out.psycopg_binary_rows, 20);
      assert.deepEqual(out.typed_binary, out.typed_text);
      assert.ok(out.typed_text.every((v: unknown) => v !== null), JSON.stringify(out.typed_text));
      assert.equal(out.psycopg2_totals[0], ROWS.length);
      assert.equal(cents(out.psycopg2_totals[1]), totalCents());
      assert.equal(out.pandas_rows, ROWS.length);
      assert.equal(out.pandas_id_sum, ROWS.reduce((s, r) => s + r.id, 0));
      assert.equal(out.pandas_dtypes.id, "int64");
      assert.equal(out.pandas_dtypes.ratio, "float64");
      assert.equal(out.pandas_dtypes.flag, "bool");
      assert.equal(out.pandas_dtypes.big, "int64");
      assert.match(out.pandas_dtypes.moment, /^datetime64\[ns, UTC\]$/);
    });

    await t.step("npm:postgres: parameters, a prepared statement run again, arrays", async () => {
      const sql = postgres({
        host: "127.0.0.1",
        port,
        user: "analyst",
        database: "tables",
        password: token,
        prepare: true,
        onnotice: () => {},
      });
      try {
        for (const id of [11, 12, 11]) {
          const rows = await sql`SELECT id, label, tags, amount FROM items WHERE id = ${id}`;
          const row = ROWS[id - 1]!;
          assert.deepEqual([...rows], [{
            id,
            label: row.label,
            tags: row.tags,
            amount: row.amount,
          }]);
        }
        const [counted] = await sql`SELECT count(*) AS n FROM items WHERE flag = ${true}`;
        assert.equal(Number(counted?.n), ROWS.filter((r) => r.flag).length);
      } finally {
        await sql.end();
      }
    });

    await t.step("pgJDBC: prepared ten times, setFetchSize(100), setQueryTimeout", async (t) => {
      if (!installed("/usr/share/java/postgresql.jar") || !installed("/usr/bin/java")) {
        return await skipped(t, "pgJDBC or a JDK is not installed");
      }
      const source = new URL("./fixtures/pgwire/Jdbc.java", import.meta.url).pathname;
      const out = await run("/usr/bin/java", [
        "-Duser.timezone=UTC",
        "-cp",
        "/usr/share/java/postgresql.jar",
        source,
        String(port),
        token,
      ]);
      const lines = Object.fromEntries(
        out.trim().split("\n").map((
          line,
        ) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
      );
      const row7 = ROWS[6]!;
      assert.match(lines.product!, /^15\./);
      assert.equal(lines.prepared_distinct, "1");
      assert.equal(
        lines.prepared_value,
        `7|${row7.amount}|${row7.moment}|${row7.label}`,
      );
      assert.equal(lines.fetched_count, String(ROWS.length));
      assert.equal(lines.fetched_sum, String(ROWS.reduce((s, r) => s + r.id, 0)));
      assert.equal(lines.timeout_state, "57014");
      assert.equal(lines.after_timeout, "42");
    });
  } finally {
    await server.dispose();
  }
});
