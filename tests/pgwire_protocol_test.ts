/**
 * The PostgreSQL protocol listener with npm:pg and raw messages, on the engine the tests run
 * on: start-up, authentication, the simple and extended protocols, transactions, errors and
 * their SQLSTATEs, cancelling, confinement to the token's schemas, and that every query the
 * HTTP guard refuses is refused over the wire too.
 */

import assert from "node:assert/strict";
// @ts-types="@types/pg"
import pg from "pg";
import { fingerprint, mint, ok, TestServer } from "./helpers/server.ts";
import { query } from "./helpers/query.ts";
import {
  errorFields,
  parameterStatus,
  pgClient,
  pgwirePort,
  RawConnection,
  sqlstate,
} from "./helpers/pgwire.ts";
import { HOSTILE } from "./fixtures/query_catalogue.ts";
import { ENGINE, onDuckDB } from "./helpers/engine.ts";
import { PG_HOSTILE } from "./fixtures/postgres_query_catalogue.ts";

const COLUMNS = [
  ["id", "integer"],
  ["big", "bigint"],
  ["small", "smallint"],
  ["ratio", "double precision"],
  ["amount", "numeric(10,2)"],
  ["label", "varchar"],
  ["flag", "boolean"],
  ["day", "date"],
  ["moment", "timestamp with time zone"],
  ["local", "timestamp"],
  ["uid", "uuid"],
  ["doc", "json"],
  ["tags", "varchar[]"],
  ["counts", "integer[]"],
];

/** Rows made up by the test, read back over the wire. */
const ROWS = Array.from({ length: 30 }, (_, i) => ({
  id: i + 1,
  big: String(2n ** 40n + BigInt(i)),
  small: i - 15,
  ratio: i / 8,
  amount: (i * 12.25 - 100).toFixed(2),
  label: i % 5 === 0 ? null : `item "${i}", {x}`,
  flag: i % 2 === 0,
  day: `2024-0${1 + (i % 9)}-1${i % 10}`,
  moment: `2024-03-0${1 + (i % 9)}T0${i % 10}:15:30.25Z`,
  local: `2023-12-2${i % 10}T12:00:0${i % 10}`,
  uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  doc: { n: i, s: "a" },
  tags: i % 3 === 0 ? [] : ["a b", `t${i}`],
  counts: [i, i * 2],
}));

async function fixture(env: Record<string, string> = {}): Promise<TestServer> {
  const server = await TestServer.start({ QUERY_TIMEOUT_SECONDS: "10", ...env });
  for (const schema of ["sales", "hr"]) ok(await server.request("POST", `schema/${schema}`));
  const columns = COLUMNS.map(([name, type]) => ({ name, type }));
  ok(await server.request("POST", "table/items", { body: { table: { columns } } }));
  ok(await server.request("POST", "table/items/records", { body: ROWS }));
  for (const [schema, name] of [["sales", "orders"], ["hr", "salaries"]]) {
    ok(
      await server.request("POST", `table/${name}?schema=${schema}`, {
        body: {
          table: { columns: [{ name: "id", type: "integer" }, { name: "who", type: "text" }] },
        },
      }),
    );
    ok(
      await server.request("POST", `table/${name}/records?schema=${schema}`, {
        body: [{ id: 1, who: `${schema} one` }, { id: 2, who: `${schema} two` }],
      }),
    );
  }
  return server;
}

Deno.test("the PostgreSQL protocol answers drivers and raw messages as PostgreSQL would", async (t) => {
  const server = await fixture();
  try {
    await t.step("npm:pg reads every row and type back as it was loaded", async () => {
      const client = await pgClient(server);
      try {
        const { rows, fields } = await client.query("SELECT * FROM items ORDER BY id");
        assert.equal(rows.length, ROWS.length);
        assert.ok(fields.every((f) => f.dataTypeID > 0), JSON.stringify(fields));
        for (const [i, row] of rows.entries()) {
          const sent = ROWS[i]!;
          assert.equal(row.id, sent.id);
          assert.equal(row.big, sent.big);
          assert.equal(row.small, sent.small);
          assert.equal(row.ratio, sent.ratio);
          assert.equal(Number(row.amount), Number(sent.amount));
          assert.equal(row.label, sent.label);
          assert.equal(row.flag, sent.flag);
          assert.equal(row.moment.toISOString(), new Date(sent.moment).toISOString());
          assert.equal(row.uid, sent.uid);
          assert.deepEqual(row.doc, sent.doc);
          assert.deepEqual(row.tags, sent.tags);
          assert.deepEqual(row.counts, sent.counts);
        }
        const types = Object.fromEntries(fields.map((f) => [f.name, f.dataTypeID]));
        const names = await client.query(
          "SELECT 1 AS one",
        );
        assert.equal(names.fields[0]!.dataTypeID, 23);
        // PostgreSQL's oids: int4, int8, int2, float8, numeric, bool, date, timestamptz,
        // timestamp, uuid, json, _varchar or _text, _int4.
        assert.equal(types.id, 23);
        assert.equal(types.big, 20);
        assert.equal(types.small, 21);
        assert.equal(types.ratio, 701);
        assert.equal(types.amount, 1700);
        assert.equal(types.flag, 16);
        assert.equal(types.day, 1082);
        assert.equal(types.moment, 1184);
        assert.equal(types.local, 1114);
        assert.equal(types.uid, 2950);
        assert.equal(types.doc, 114);
        assert.ok([1009, 1015].includes(types.tags!), String(types.tags));
        assert.equal(types.counts, 1007);
        const amount = fields.find((f) => f.name === "amount")!;
        assert.equal(amount.dataTypeModifier, ((10 << 16) | 2) + 4);
      } finally {
        await client.end();
      }
    });

    await t.step("parameters bind by position, and named statements run again", async () => {
      const client = await pgClient(server);
      try {
        for (const id of [3, 7, 3]) {
          const { rows } = await client.query({
            name: "by_id",
            text: "SELECT id, label, tags FROM items WHERE id = $1 AND flag = $2",
            values: [id, ROWS[id - 1]!.flag],
          });
          assert.deepEqual(rows, [{ id, label: ROWS[id - 1]!.label, tags: ROWS[id - 1]!.tags }]);
        }
        const { rows } = await client.query(
          "SELECT count(*) AS n FROM items WHERE id > $1 AND label IS NOT NULL",
          [10],
        );
        assert.equal(Number(rows[0].n), ROWS.filter((r) => r.id > 10 && r.label !== null).length);
      } finally {
        await client.end();
      }
    });

    await t.step("a query run again after its table changed reads the table as it is", async () => {
      const columns = [{ name: "id", type: "integer" }, { name: "v", type: "integer" }];
      ok(await server.request("POST", "table/changing", { body: { table: { columns } } }));
      ok(
        await server.request("POST", "table/changing/records", {
          body: [{ id: 1, v: 10 }, { id: 2, v: 20 }],
        }),
      );
      const client = await pgClient(server);
      const read = async () => {
        const simple = await client.query("SELECT * FROM changing ORDER BY id");
        const bound = await client.query("SELECT * FROM changing WHERE id >= $1 ORDER BY id", [1]);
        assert.deepEqual(bound.rows, simple.rows);
        return { rows: simple.rows, types: simple.fields.map((f) => f.dataTypeID) };
      };
      try {
        // Read twice, so that whatever the service keeps of the query is kept.
        await read();
        assert.deepEqual(await read(), {
          rows: [{ id: 1, v: 10 }, { id: 2, v: 20 }],
          types: [23, 23],
        });
        const { table } = ok(await server.request("GET", "table/changing"));
        ok(
          await server.request("PUT", "table/changing", {
            body: {
              table: {
                columns: [
                  table.columns[0],
                  { ...table.columns[1], type: "varchar" },
                  { name: "w", type: "boolean" },
                ],
              },
            },
          }),
        );
        assert.deepEqual(await read(), {
          rows: [{ id: 1, v: "10", w: null }, { id: 2, v: "20", w: null }],
          types: [23, ENGINE === "postgres" ? 1043 : 25, 16],
        });
        ok(await server.request("DELETE", "table/changing"));
        ok(
          await server.request("POST", "table/changing", {
            body: { table: { columns: [{ name: "id", type: "double" }] } },
          }),
        );
        ok(await server.request("POST", "table/changing/records", { body: [{ id: 1.5 }] }));
        assert.deepEqual(await read(), { rows: [{ id: 1.5 }], types: [701] });
      } finally {
        await client.end();
      }
    });

    await t.step("several statements in one message each answer, an empty one too", async () => {
      const client = await pgClient(server);
      try {
        const results = await client.query(
          "SELECT 1 AS a; SELECT id FROM items WHERE id <= 2 ORDER BY id",
        ) as unknown as pg.QueryResult[];
        assert.equal(results.length, 2);
        assert.deepEqual(results[1]!.rows, [{ id: 1 }, { id: 2 }]);
        const empty = await client.query("");
        assert.equal(empty.rows.length, 0);
      } finally {
        await client.end();
      }
    });

    await t.step("errors carry PostgreSQL's SQLSTATEs and the session goes on", async () => {
      const confined = await mint({ scope: "tables:read", schemas: ["public", "sales"] });
      const client = await pgClient(server, confined);
      try {
        assert.equal(await sqlstate(client.query("SELEC 1")), "42601");
        assert.equal(await sqlstate(client.query("SELECT * FROM missing_table")), "42P01");
        assert.equal(await sqlstate(client.query("SELECT * FROM hr.salaries")), "42501");
        assert.equal(await sqlstate(client.query("INSERT INTO items (id) VALUES (99)")), "25006");
        assert.equal(await sqlstate(client.query("DELETE FROM items")), "25006");
        assert.equal(await sqlstate(client.query("COPY items TO STDOUT")), "0A000");
        assert.equal(await sqlstate(client.query("SET work_mem = '1GB'")), "42501");
        assert.equal(await sqlstate(client.query("SET search_path = hr")), "42501");
        const { rows } = await client.query("SELECT count(*) AS n FROM sales.orders");
        assert.equal(Number(rows[0].n), 2);
      } finally {
        await client.end();
      }
    });

    await t.step("a failure in a transaction block is 25P02 until ROLLBACK", async () => {
      const client = await pgClient(server);
      try {
        await client.query("BEGIN");
        assert.equal(await sqlstate(client.query("SELECT * FROM missing_table")), "42P01");
        assert.equal(await sqlstate(client.query("SELECT 1 AS one")), "25P02");
        await client.query("ROLLBACK");
        assert.deepEqual((await client.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
      } finally {
        await client.end();
      }
    });

    await t.step("statements between BEGIN and COMMIT read one snapshot", async () => {
      const client = await pgClient(server);
      try {
        const count = async () =>
          Number((await client.query("SELECT count(*) AS n FROM sales.orders")).rows[0].n);
        await client.query("BEGIN");
        const before = await count();
        ok(
          await server.request("POST", "table/orders/records?schema=sales", {
            body: [{ id: 3, who: "added meanwhile" }],
          }),
        );
        assert.equal(await count(), before);
        await client.query("COMMIT");
        assert.equal(await count(), before + 1);
      } finally {
        await client.end();
      }
    });

    await t.step("SET, SHOW and RESET of client settings", async () => {
      const client = await pgClient(server);
      try {
        const show = async (name: string) =>
          Object.values((await client.query(`SHOW ${name}`)).rows[0])[0];
        assert.equal(await show("server_version"), "15.8");
        assert.equal(await show("transaction_read_only"), "on");
        const started = await show("application_name");
        await client.query("SET application_name = 'wire test'");
        assert.equal(await show("application_name"), "wire test");
        // As PostgreSQL 15 keeps it: 63 bytes at most, each byte that is not printable ASCII
        // a "?", the spaces at its ends kept, a word unquoted folded to lower case.
        await client.query("SET application_name = ' Zoë\t '");
        assert.equal(await show("application_name"), " Zo??? ");
        await client.query(`SET application_name = '${"é".repeat(40)}'`);
        assert.equal(await show("application_name"), "?".repeat(62));
        await client.query("SET application_name TO WireTest");
        assert.equal(await show("application_name"), "wiretest");
        await client.query("RESET application_name");
        assert.equal(await show("application_name"), started);
        await client.query("SET search_path TO sales");
        assert.deepEqual((await client.query("SELECT count(*) AS n FROM orders")).rows.length, 1);
        await client.query("RESET search_path");
        assert.equal(await show("search_path"), "public");
        await client.query("SET statement_timeout = '2s'");
        assert.equal(await show("statement_timeout"), "2s");
        await client.query("SET statement_timeout = 1500");
        assert.equal(await show("statement_timeout"), "1500ms");
        assert.equal(await sqlstate(client.query("SET statement_timeout = '1h'")), "42501");
        const version = (await client.query("SELECT version()")).rows[0].version;
        assert.match(version, /^PostgreSQL 15\./);
      } finally {
        await client.end();
      }
    });

    await t.step(
      "a CancelRequest with the connection's key interrupts its query (57014)",
      async () => {
        const client = await pgClient(server);
        try {
          const { processID, secretKey } = client as unknown as {
            processID: number;
            secretKey: number;
          };
          const long = client.query(
            "SELECT count(*) AS n FROM items a, items b, items c, items d, items e, items f, items g",
          );
          let settled = false;
          // The code and the words: a timeout would be 57014 too, but "due to statement timeout".
          const outcome = long.then(
            () => "none",
            (error) => `${error.code} ${error.message}`,
          ).finally(() => settled = true);
          while (!settled) {
            const raw = await RawConnection.open(pgwirePort(server));
            const body = new Uint8Array(16);
            const view = new DataView(body.buffer);
            view.setInt32(0, 16);
            view.setInt32(4, 80877102);
            view.setInt32(8, processID);
            view.setInt32(12, secretKey);
            await raw.write(body);
            await raw.message();
            raw.close();
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          assert.equal(await outcome, "57014 canceling statement due to user request");
          assert.deepEqual((await client.query("SELECT 2 AS two")).rows, [{ two: 2 }]);
        } finally {
          await client.end();
        }
      },
    );

    await t.step(
      "start-up: SSLRequest and GSSENCRequest are declined, a newer minor version negotiated",
      async () => {
        const raw = await RawConnection.open(pgwirePort(server));
        try {
          await raw.startup(80877103);
          assert.equal(await raw.byte(), "N");
          await raw.startup(80877104);
          assert.equal(await raw.byte(), "N");
          await raw.startup(196608 + 2, { user: "raw", database: "anything", _pq_ext: "1" });
          const negotiated = await raw.message();
          assert.equal(negotiated?.type, "v");
          const auth = await raw.message();
          assert.equal(auth?.type, "R");
          await raw.send("p", RawConnection.cstring(server.token));
          const messages = await raw.until("Z");
          const statuses = Object.fromEntries(
            messages.filter((m) => m.type === "S").map((m) => parameterStatus(m.body)),
          );
          assert.equal(statuses.server_version, "15.8");
          assert.equal(statuses.client_encoding, "UTF8");
          assert.equal(statuses.DateStyle, "ISO, MDY");
          assert.equal(statuses.TimeZone, "UTC");
          assert.equal(statuses.integer_datetimes, "on");
          assert.equal(statuses.standard_conforming_strings, "on");
          assert.equal(statuses.default_transaction_read_only, "on");
          assert.ok(messages.some((m) => m.type === "K"));
          assert.equal(String.fromCharCode(messages.at(-1)!.body[0]!), "I");
          await raw.send("Q", RawConnection.cstring("BEGIN"));
          const begun = await raw.until("Z");
          assert.equal(String.fromCharCode(begun.at(-1)!.body[0]!), "T");
        } finally {
          raw.close();
        }
      },
    );

    await t.step(
      "the extended protocol: Describe, binary Bind, row limits across Sync, skipping after an error",
      async () => {
        const raw = await RawConnection.open(pgwirePort(server));
        const int16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
        const int32 = (
          n: number,
        ) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
        const types = (messages: { type: string }[]) => messages.map((m) => m.type).join("");
        const ids = (messages: { type: string; body: Uint8Array }[]) =>
          messages.filter((m) => m.type === "D").map((m) =>
            new DataView(m.body.buffer, m.body.byteOffset).getInt32(6)
          );
        try {
          await raw.startup(196608, { user: "raw" });
          await raw.until("R");
          await raw.send("p", RawConnection.cstring(server.token));
          await raw.until("Z");
          // As on PostgreSQL, a statement that cannot run fails at Parse: no ParseComplete,
          // and the Bind after it is skipped until Sync.
          for (
            const [bad, code] of <[string, string][]> [
              ["SELEC 1", "42601"],
              ["SELECT * FROM no_such_table", "42P01"],
              ["SELECT no_such_column FROM items", "42703"],
            ]
          ) {
            await raw.send("P", [
              ...RawConnection.cstring("bad"),
              ...RawConnection.cstring(bad),
              ...int16(0),
            ]);
            await raw.send("B", [
              ...RawConnection.cstring(""),
              ...RawConnection.cstring("bad"),
              ...int16(0),
              ...int16(0),
              ...int16(0),
            ]);
            await raw.send("S");
            const refused = await raw.until("Z");
            assert.equal(types(refused), "EZ", bad);
            assert.equal(errorFields(refused[0]!.body).C, code, bad);
          }
          const sql = "SELECT id FROM items WHERE id <= $1 ORDER BY id";
          await raw.send("P", [
            ...RawConnection.cstring("s1"),
            ...RawConnection.cstring(sql),
            ...int16(1),
            ...int32(23),
          ]);
          await raw.send("D", [83, ...RawConnection.cstring("s1")]);
          await raw.send("S");
          const described = await raw.until("Z");
          assert.equal(types(described), "1tTZ");
          assert.deepEqual([...described[1]!.body], [0, 1, ...int32(23)]);
          await raw.send("Q", RawConnection.cstring("BEGIN"));
          await raw.until("Z");
          // Portal p1: the parameter 5 in binary, the result in binary, two rows at a time.
          const bind = [
            ...RawConnection.cstring("p1"),
            ...RawConnection.cstring("s1"),
            ...int16(1),
            ...int16(1),
            ...int16(1),
            ...int32(4),
            ...int32(5),
            ...int16(1),
            ...int16(1),
          ];
          await raw.send("B", bind);
          await raw.send("E", [...RawConnection.cstring("p1"), ...int32(2)]);
          await raw.send("S");
          const first = await raw.until("Z");
          assert.equal(types(first), "2DDsZ");
          assert.equal(String.fromCharCode(first.at(-1)!.body[0]!), "T");
          await raw.send("E", [...RawConnection.cstring("p1"), ...int32(0)]);
          await raw.send("S");
          const rest = await raw.until("Z");
          const expected = ROWS.filter((r) => r.id <= 5).map((r) => r.id);
          assert.deepEqual([...ids(first), ...ids(rest)], expected);
          assert.equal(types(rest), `${"D".repeat(expected.length - 2)}CZ`);
          // After an error every message until Sync is skipped; the block has failed.
          await raw.send("P", [
            ...RawConnection.cstring(""),
            ...RawConnection.cstring("SELECT 1; SELECT 2"),
            ...int16(0),
          ]);
          await raw.send("B", [0, 0, ...int16(0), ...int16(0), ...int16(0)]);
          await raw.send("E", [0, ...int32(0)]);
          await raw.send("S");
          const failed = await raw.until("Z");
          assert.equal(types(failed), "EZ");
          assert.equal(errorFields(failed[0]!.body).C, "42601");
          assert.equal(String.fromCharCode(failed.at(-1)!.body[0]!), "E");
          await raw.send("Q", RawConnection.cstring("ROLLBACK"));
          const rolled = await raw.until("Z");
          assert.equal(String.fromCharCode(rolled.at(-1)!.body[0]!), "I");
          await raw.send("C", [83, ...RawConnection.cstring("s1")]);
          await raw.send("S");
          assert.equal(types(await raw.until("Z")), "3Z");
        } finally {
          raw.close();
        }
      },
    );

    await t.step("a bad token is FATAL 28P01, and the token is never logged", async () => {
      const other = await mint({ scope: "tables:read", secret: "x".repeat(40) });
      const error = await sqlstate(pgClient(server, other));
      assert.equal(error, "28P01");
      const templates = await mint({ scope: "templates:read" });
      assert.equal(await sqlstate(pgClient(server, templates)), "28P01");
      assert.ok(!server.stderr.includes(server.token));
      assert.ok(!server.stderr.includes(other));
    });

    await t.step("a message past the size bound is 08P01 and the connection closes", async () => {
      const raw = await RawConnection.open(pgwirePort(server));
      try {
        await raw.startup(196608, { user: "raw" });
        await raw.until("R");
        await raw.send("p", RawConnection.cstring(server.token));
        await raw.until("Z");
        const header = new Uint8Array(5);
        header[0] = "Q".charCodeAt(0);
        new DataView(header.buffer).setInt32(1, 0x7ffffff0);
        await raw.write(header);
        const error = await raw.message();
        assert.equal(error?.type, "E");
        assert.equal(errorFields(error!.body).C, "08P01");
        assert.equal(await raw.message(), null);
      } finally {
        raw.close();
      }
    });

    await t.step("/metrics counts the listener's connections and statements", async () => {
      const answer = await server.request("GET", "/metrics");
      assert.equal(answer.status, 200);
      assert.match(answer.text, /^table_service_pgwire_connections_total [1-9]/m);
      assert.match(
        answer.text,
        /^table_service_pgwire_statements_total\{sqlstate="00000"\} [1-9]/m,
      );
      assert.match(
        answer.text,
        /^table_service_pgwire_statements_total\{sqlstate="25006"\} [1-9]/m,
      );
    });
  } finally {
    await server.dispose();
  }
});

Deno.test("two tokens with different schemas claims read disjoint schemas over the wire", async () => {
  const server = await fixture();
  try {
    const sales = await pgClient(server, await mint({ scope: "tables:read", schemas: ["sales"] }));
    const hr = await pgClient(server, await mint({ scope: "tables:read", schemas: ["hr"] }));
    try {
      assert.equal(
        (await sales.query("SELECT who FROM orders ORDER BY id")).rows[0].who,
        "sales one",
      );
      assert.equal((await hr.query("SELECT who FROM salaries ORDER BY id")).rows[0].who, "hr one");
      assert.equal(await sqlstate(sales.query("SELECT * FROM hr.salaries")), "42501");
      assert.equal(await sqlstate(hr.query("SELECT * FROM sales.orders")), "42501");
      assert.equal(await sqlstate(hr.query("SELECT * FROM public.items")), "42501");
    } finally {
      await sales.end();
      await hr.end();
    }
  } finally {
    await server.dispose();
  }
});

/**
 * What the listener answers by design where `POST /query`, which runs exactly one query,
 * refuses: transaction control, `RESET`, a search path, nothing at all, several plain reads in
 * one message, the session functions drivers call on connecting, and the catalog (emulated,
 * holding nothing but the token's schemas; see pgwire_catalog_test.ts).
 */
function answeredByDesign(sql: string): boolean {
  // The emulated catalog answers these, from a database holding only the token's tables.
  if (
    /\b(pg_catalog|information_schema)\s*\.|\bpg_[a-z_]+\b|\b(format_type|has_\w+_privilege|current_schemas|obj_description|col_description)\s*\(/i
      .test(sql)
  ) return true;
  const pieces = sql.replace(/'(?:[^']|'')*'/g, "''")
    .replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, "").split(";").map((piece) => piece.trim())
    .filter((piece) => piece !== "");
  return pieces.every((piece) =>
    /^(BEGIN( TRANSACTION)?|COMMIT|ROLLBACK|RESET ALL|SET search_path = \w+|SELECT \d+|SELECT ''|SELECT (version|current_database|current_schema|pg_backend_pid)\(\)|SELECT (current_user|session_user|user|current_catalog|current_schema))$/i
      .test(piece)
  );
}

Deno.test("every hostile query POST /query refuses is refused over the wire, and nothing changes", async () => {
  const server = await fixture();
  try {
    const before = await fingerprint(server);
    const client = await pgClient(server);
    const wrong: string[] = [];
    let refusedOverHttp = 0;
    try {
      for (const hostile of [...HOSTILE, ...PG_HOSTILE]) {
        if (hostile.schemas) continue;
        const http = await query(server, hostile.sql);
        if (http.status < 400) continue;
        refusedOverHttp++;
        const code = await sqlstate(client.query(hostile.sql));
        if (code === "none" && !answeredByDesign(hostile.sql)) wrong.push(hostile.sql);
        if (code === "XX000") wrong.push(`${code}: ${hostile.sql}`);
      }
    } finally {
      await client.end();
    }
    assert.ok(refusedOverHttp >= 100, String(refusedOverHttp));
    assert.deepEqual(wrong, []);
    assert.equal(await fingerprint(server), before);
  } finally {
    await server.dispose();
  }
});

Deno.test("PGWIRE_MAX_CONNECTIONS refuses a client beyond it with 53300", async () => {
  const server = await TestServer.start({ PGWIRE_MAX_CONNECTIONS: "1" });
  try {
    const first = await pgClient(server);
    try {
      assert.equal(await sqlstate(pgClient(server)), "53300");
      assert.deepEqual((await first.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
    } finally {
      await first.end();
    }
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("a query that exhausts DuckDB's memory is 53200, and the session goes on", async () => {
  const server = await TestServer.start({ DUCKDB_MEMORY_LIMIT: "256MiB" });
  try {
    const client = await pgClient(server);
    try {
      // A list aggregate cannot spill: 100 million BIGINTs are 800 MB past the 256 MiB limit.
      const query = client.query("SELECT length(list(range)) AS n FROM range(100000000)");
      assert.equal(await sqlstate(query), "53200");
      assert.deepEqual((await client.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
    } finally {
      await client.end();
    }
  } finally {
    await server.dispose();
  }
});

onDuckDB.test("DuckDB's own types get PostgreSQL's oids: 128-bit and unsigned integers numeric, ENUM text, nested json", async () => {
  const server = await TestServer.start();
  try {
    const columns = [
      { name: "huge", type: "HUGEINT" },
      { name: "ubig", type: "UBIGINT" },
      { name: "usmall", type: "USMALLINT" },
      { name: "mood", type: "ENUM('sad', 'ok', 'happy')" },
      { name: "point", type: "STRUCT(x INTEGER, y VARCHAR)" },
      { name: "tags", type: "MAP(VARCHAR, INTEGER)" },
      { name: "grid", type: "INTEGER[][]" },
      { name: "span", type: "INTERVAL" },
      { name: "raw", type: "BLOB" },
      { name: "clock", type: "TIME" },
    ];
    ok(await server.request("POST", "table/odd", { body: { table: { columns } } }));
    const row = {
      huge: "170141183460469231731687303715884105727",
      ubig: "18446744073709551615",
      usmall: 65535,
      mood: "happy",
      point: { x: 1, y: "a" },
      tags: { k: 2 },
      grid: [[1, 2], [3]],
      span: "1 year 2 months 3 days 04:05:06",
      raw: btoa("\u0000\u00ff"),
      clock: "13:14:15",
    };
    ok(await server.request("POST", "table/odd/records", { body: [row] }));
    const client = await pgClient(server);
    try {
      const { rows, fields } = await client.query("SELECT * FROM odd");
      const oids = Object.fromEntries(fields.map((f) => [f.name, f.dataTypeID]));
      assert.deepEqual(oids, {
        huge: 1700,
        ubig: 1700,
        usmall: 23,
        mood: 25,
        point: 114,
        tags: 114,
        grid: 114,
        span: 1186,
        raw: 17,
        clock: 1083,
      });
      const [read] = rows;
      assert.equal(read.huge, row.huge);
      assert.equal(read.ubig, row.ubig);
      assert.equal(read.usmall, row.usmall);
      assert.equal(read.mood, row.mood);
      assert.deepEqual(read.point, row.point);
      assert.deepEqual(read.tags, row.tags);
      assert.deepEqual(read.grid, row.grid);
      assert.deepEqual(
        {
          years: read.span.years,
          months: read.span.months,
          days: read.span.days,
          hours: read.span.hours,
        },
        { years: 1, months: 2, days: 3, hours: 4 },
      );
      assert.deepEqual([...read.raw], [0, 255]);
      assert.equal(read.clock, row.clock);
    } finally {
      await client.end();
    }
  } finally {
    await server.dispose();
  }
});
