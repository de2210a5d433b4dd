import assert from "node:assert/strict";
import * as XLSX from "xlsx";
import { LOAD_FLAGS, LOAD_VARIABLES } from "../src/cli/load/args.ts";
import { ENGINE } from "./helpers/engine.ts";
import { mint, ok, TestServer } from "./helpers/server.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------
// End to end: the CLI as a user runs it, against the real service
// ---------------------------------------------------------------------------------------

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the CLI with the permissions of `deno task load` and only `env` set; killed after
 * `killAfterMs`, so a hang fails the test instead of stalling it.
 */
async function load(
  args: string[],
  env: Record<string, string> = {},
  killAfterMs = 120_000,
  stdin?: Uint8Array,
): Promise<Run> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-env",
      "--allow-net",
      "--allow-read",
      `${ROOT}src/cli/load/mod.ts`,
      ...args,
    ],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(stdin);
    await writer.close();
  }
  const guard = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
  const output = await child.output().finally(() => clearTimeout(guard));
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** The parsed success answer of a run, after checking its exit code. */
function answer(run: Run): { table: { name: string; schema: string }; inserted: number } {
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout);
}

async function records(server: TestServer, table: string, schema = "public") {
  return ok(await server.request("GET", `table/${table}/records?schema=${schema}&limit=10000`));
}

Deno.test("the load command's --help lists every flag and variable it reads", async () => {
  for (const help of ["--help", "-h"]) {
    const run = await load([help]);
    assert.equal(run.code, 0, run.stderr);
    // Each flag and variable starts a line of its own: described, not just mentioned.
    for (const [name, spec] of Object.entries(LOAD_FLAGS)) {
      const short = "short" in spec ? `-${spec.short}, ` : "";
      assert.match(run.stdout, new RegExp(`^ +${short}--${name}\\b`, "m"), `--${name} in ${help}`);
    }
    assert.ok("help" in LOAD_FLAGS);
    for (const variable of LOAD_VARIABLES) {
      assert.match(run.stdout, new RegExp(`^ +${variable}\\b`, "m"), `${variable} in ${help}`);
    }
  }
});

Deno.test("the load command streams files to the service and explains every failure", async (t) => {
  const server = await TestServer.start({ MAX_UPLOAD_BYTES: "24MiB" });
  const dir = await Deno.makeTempDir({ prefix: "load-cli-test-" });
  const target = (file: string, table: string, ...more: string[]) => [
    `${dir}/${file}`,
    "--table",
    table,
    "--url",
    server.base,
    "--token",
    server.token,
    ...more,
  ];
  try {
    await Deno.writeTextFile(
      `${dir}/people.csv`,
      "id,name,score\n1,Ada,91.5\n2,Grace,88\n3,Hedy,\n",
    );

    await t.step("a CSV file becomes a table", async () => {
      const run = await load(target("people.csv", "people"));
      const result = answer(run);
      assert.equal(result.inserted, 3);
      assert.equal(result.table.name, "people");
      assert.match(run.stderr, /^loaded 3 rows into public\.people \(/m);
      const { records: rows, total } = await records(server, "people");
      assert.equal(total, 3);
      assert.deepEqual(rows[0], { id: 1, name: "Ada", score: 91.5 });
      assert.deepEqual(rows[2], { id: 3, name: "Hedy", score: null });
    });

    await t.step("a relative path is read from INIT_CWD, where deno task was run", async () => {
      // deno task runs the CLI in the project's directory and names the user's in INIT_CWD.
      await Deno.writeTextFile(
        `${dir}/lang.def.json`,
        '{"columns": [{"name": "n", "type": "text"}]}',
      );
      await Deno.writeTextFile(`${dir}/lang.csv`, "n\n0123\n");
      const args = ["lang.csv", "--table", "lang", "--definition", "lang.def.json"];
      const run = await load([...args, "--url", server.base, "--token", server.token], {
        INIT_CWD: dir,
      });
      assert.equal(answer(run).inserted, 1);
      assert.deepEqual((await records(server, "lang")).records, [{ n: "0123" }]);
    });

    await t.step("- reads the rows from standard input, as --format says", async () => {
      const csv = await load(
        ["-", "--table", "piped", "--format", "csv", "--url", server.base, "--token", server.token],
        {},
        120_000,
        encoder.encode("id,name\n1,Ada\n2,Grace\n"),
      );
      assert.equal(answer(csv).inserted, 2);
      assert.match(csv.stderr, /^loaded 2 rows into public\.piped \(/m);
      const json = await load(
        [
          "-",
          "--table",
          "piped",
          "--format",
          "json",
          "--if-exists",
          "append",
          "--url",
          server.base,
          "--token",
          server.token,
        ],
        {},
        120_000,
        encoder.encode('\ufeff [{"id": 3, "name": "Hedy"}]'),
      );
      assert.equal(answer(json).inserted, 1);
      assert.deepEqual((await records(server, "piped")).records.map((r: { id: number }) => r.id), [
        1,
        2,
        3,
      ]);
    });

    await t.step("an existing table is a 409 with a hint, and stays as it was", async () => {
      const before = await records(server, "people");
      const run = await load(target("people.csv", "people"));
      assert.equal(run.code, 1);
      assert.equal(run.stdout, "");
      assert.match(run.stderr, /^error 409: .*already exists/m);
      assert.match(run.stderr, /^hint: .*--if-exists replace .*--if-exists append/m);
      assert.deepEqual(await records(server, "people"), before);
    });

    await t.step("--if-exists append adds the rows, replace starts over", async () => {
      assert.equal(
        answer(await load(target("people.csv", "people", "--if-exists", "append"))).inserted,
        3,
      );
      assert.equal((await records(server, "people")).total, 6);
      assert.equal(
        answer(await load(target("people.csv", "people", "--if-exists", "replace"))).inserted,
        3,
      );
      assert.equal((await records(server, "people")).total, 3);
    });

    await t.step(
      "a load sent again with its --idempotency-key is answered, not loaded twice",
      async () => {
        const again = target(
          "people.csv",
          "people",
          "--if-exists",
          "append",
          "--idempotency-key",
          "people-1",
        );
        const first = await load(again);
        assert.equal(answer(first).inserted, 3);
        const second = await load(again);
        assert.equal(answer(second).inserted, 3);
        assert.equal((await records(server, "people")).total, 6);
        const wrong = await load(target("people.csv", "people", "--idempotency-key", "a key"));
        assert.equal(wrong.code, 2);
        assert.match(wrong.stderr, /--idempotency-key must be 1-255 visible ASCII characters/);
      },
    );

    await t.step("a JSON envelope goes as it is, its definition included", async () => {
      const envelope = {
        table: { columns: [{ name: "id", type: "integer" }, { name: "born", type: "date" }] },
        data: [{ id: 1, born: "1815-12-10" }, { id: 2, born: "1906-12-09" }],
      };
      await Deno.writeTextFile(`${dir}/born.json`, JSON.stringify(envelope));
      // The token from the environment this time.
      const args = target("born.json", "born").slice(0, -2);
      const result = answer(await load(args, { TABLE_SERVICE_TOKEN: server.token }));
      assert.equal(result.inserted, 2);
      const { table } = ok(await server.request("GET", "table/born"));
      assert.deepEqual(
        table.columns.map((c: { type: string }) => c.type),
        ENGINE === "duckdb" ? ["INTEGER", "DATE"] : ["integer", "date"],
      );
      assert.deepEqual((await records(server, "born")).records[1], { id: 2, born: "1906-12-09" });
    });

    await t.step("a plain JSON array is wrapped, with --definition and --schema", async () => {
      ok(await server.request("POST", "schema/sales"));
      await Deno.writeTextFile(`${dir}/orders.json`, '[[1, "pen", 2.5], [2, "ink", 7]]');
      await Deno.writeTextFile(
        `${dir}/orders.def.json`,
        JSON.stringify({
          table: {
            columns: [
              { name: "id", type: "integer", is_nullable: false },
              { name: "item", type: "text" },
              { name: "price", type: "numeric(10,2)" },
            ],
            constraints: { primary_key: { columns: ["id"] } },
          },
        }),
      );
      const run = await load(
        target(
          "orders.json",
          "orders",
          "--schema",
          "sales",
          "--definition",
          `${dir}/orders.def.json`,
        ),
      );
      const result = answer(run);
      assert.equal(result.inserted, 2);
      assert.equal(result.table.schema, "sales");
      assert.deepEqual((await records(server, "orders", "sales")).records, [
        { id: 1, item: "pen", price: 2.5 },
        { id: 2, item: "ink", price: 7 },
      ]);
    });

    await t.step("a spreadsheet goes to upload/excel, its sheet chosen with --sheet", async () => {
      const book = XLSX.utils.book_new();
      XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([["x"], [0]]), "Cover");
      XLSX.utils.book_append_sheet(
        book,
        XLSX.utils.aoa_to_sheet([["sku", "Unit Price"], ["A-1", 3.5], ["B-2", 10], ["C-3", 0.25]]),
        "Prices",
      );
      const bytes = XLSX.write(book, { type: "array", bookType: "xlsx" }) as ArrayBuffer;
      await Deno.writeFile(`${dir}/prices.xlsx`, new Uint8Array(bytes));
      const result = answer(await load(target("prices.xlsx", "prices", "--sheet", "Prices")));
      assert.equal(result.inserted, 3);
      assert.deepEqual((await records(server, "prices")).records, [
        { sku: "A-1", "Unit Price": 3.5 },
        { sku: "B-2", "Unit Price": 10 },
        { sku: "C-3", "Unit Price": 0.25 },
      ]);
    });

    await t.step("a CSV with --definition gets the defined types", async () => {
      await Deno.writeTextFile(
        `${dir}/zips.def.json`,
        JSON.stringify({
          columns: [{ name: "zip", type: "varchar" }, { name: "n", type: "integer" }],
        }),
      );
      await Deno.writeTextFile(`${dir}/zips.tsv`, "zip\tn\n01234\t1\n00042\t2\n");
      const run = await load(target("zips.tsv", "zips", "--definition", `${dir}/zips.def.json`));
      assert.equal(answer(run).inserted, 2);
      assert.deepEqual((await records(server, "zips")).records, [
        { zip: "01234", n: 1 },
        { zip: "00042", n: 2 },
      ]);
    });

    await t.step("a bad token is a 401 with a hint about the token", async () => {
      const wrong = await mint({
        scope: "tables:write",
        secret: "another-secret-that-is-long-enough-0123456789",
      });
      const run = await load([...target("people.csv", "nobody").slice(0, -1), wrong]);
      assert.equal(run.code, 1);
      assert.match(run.stderr, /^error 401: /m);
      assert.match(run.stderr, /^hint: .*--token or set TABLE_SERVICE_TOKEN/m);
      assert.equal((await server.request("GET", "table/nobody")).status, 404);
    });

    await t.step("a file over the service's limit is refused early with a 413", async () => {
      // 30 MB of rows against a 24 MiB limit: refused on its announced length.
      const row = encoder.encode('{"id":1,"text":"' + "x".repeat(980) + '"},');
      const file = await Deno.open(`${dir}/huge.json`, { write: true, create: true });
      await file.write(encoder.encode("["));
      const block = new Uint8Array(row.length * 1000);
      for (let i = 0; i < 1000; i++) block.set(row, i * row.length);
      for (let i = 0; i < 30; i++) await file.write(block);
      await file.write(encoder.encode("{}]"));
      file.close();
      const run = await load(target("huge.json", "huge"));
      assert.equal(run.code, 1);
      assert.match(run.stderr, /^error 413: /m);
      assert.match(run.stderr, /^hint: .*MAX_UPLOAD_BYTES/m);
    });

    await t.step(
      "a missing file, a closed port and a wrong command line fail clearly",
      async () => {
        const missing = await load(target("absent.csv", "absent"));
        assert.equal(missing.code, 1);
        assert.match(missing.stderr, /^error: Cannot read ".*absent\.csv": no such file$/m);

        const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const closed = `http://127.0.0.1:${listener.addr.port}`;
        listener.close();
        const unreachable = await load([`${dir}/people.csv`, "--table", "t", "--url", closed]);
        assert.equal(unreachable.code, 1);
        assert.match(
          unreachable.stderr,
          new RegExp(`^error: Cannot reach the service at ${closed}: connection refused$`, "m"),
        );

        const usage = await load([`${dir}/people.csv`, "--table", "t", "--if-exists", "overwrite"]);
        assert.equal(usage.code, 2);
        assert.match(
          usage.stderr,
          /^error: --if-exists "overwrite" is not one of fail, replace, append$/m,
        );
        assert.match(usage.stderr, /^usage: deno task load -- FILE --table NAME/m);

        const unknown = await load([`${dir}/notes.md`, "--table", "t"]);
        assert.equal(unknown.code, 2);
        assert.match(unknown.stderr, /"[^"]*notes\.md" has an unknown extension/);
      },
    );

    await t.step(
      "--timeout gives up on a service that takes the body and never answers",
      async () => {
        // Accepts connections and reads what comes, but never answers.
        const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const held: Deno.Conn[] = [];
        const reads: Promise<void>[] = [];
        const accepting = (async () => {
          for await (const conn of listener) {
            held.push(conn);
            reads.push(conn.readable.pipeTo(new WritableStream()).catch(() => {}));
          }
        })();
        const silent = `http://127.0.0.1:${listener.addr.port}`;
        try {
          // Killed after 20 s, which fails the exit code check below.
          const run = await load(
            [`${dir}/people.csv`, "--table", "t", "--url", silent, "--timeout", "1"],
            {},
            20_000,
          );
          assert.equal(run.code, 1, run.stderr);
          assert.match(
            run.stderr,
            new RegExp(
              `^error: Gave up: nothing sent to or received from ${silent}` +
                `/api/v1/table/t/upload/csv\\?if_exists=fail for 1 s, after the whole file was sent$`,
              "m",
            ),
          );
          assert.match(
            run.stderr,
            /^hint: the service may still load it: look at the table before sending it again; pass a longer --timeout, or 0 to wait/m,
          );
          assert.equal(run.stdout, "");
          assert.ok(held.length >= 1, "the request reached the listener");
        } finally {
          listener.close();
          for (const conn of held) {
            try {
              conn.close();
            } catch { /* closed by the client */ }
          }
          await accepting.catch(() => {});
          await Promise.all(reads);
        }
      },
    );

    await t.step("--timeout leaves a load that keeps moving alone", async () => {
      const run = await load(target("people.csv", "timed", "--timeout", "30"));
      assert.equal(answer(run).inserted, 3);
    });

    await t.step("a 20 MB CSV streams with progress lines on standard error", async () => {
      const rows = 850_000;
      const file = await Deno.open(`${dir}/big.csv`, { write: true, create: true });
      await file.write(encoder.encode("id,label,amount\n"));
      for (let start = 0; start < rows; start += 50_000) {
        let text = "";
        for (let i = start; i < start + 50_000; i++) text += `${i},label-${i % 997},${i * 0.25}\n`;
        await file.write(encoder.encode(text));
      }
      file.close();
      const size = (await Deno.stat(`${dir}/big.csv`)).size;
      assert.ok(size > 20_000_000, `${size} bytes`);

      const run = await load(target("big.csv", "big"));
      assert.equal(answer(run).inserted, rows);
      const progress = run.stderr.split("\n").filter((line) => line.startsWith("["));
      // Not a terminal: plain lines at the quarters and a final one, no redraws.
      assert.ok(progress.length >= 2 && progress.length <= 5, run.stderr);
      assert.ok(!run.stderr.includes("\r"));
      assert.match(
        progress.at(-1)!,
        /^\[#{24}\] 100% {2}2\d\.\d MB \/ 2\d\.\d MB {2}.* [kMG]?B\/s {2}sent in /,
      );
      const { records: last, total } = ok(
        await server.request("GET", `table/big/records?offset=${rows - 1}&limit=1`),
      );
      assert.equal(total, rows);
      assert.deepEqual(last, [{
        id: rows - 1,
        label: `label-${(rows - 1) % 997}`,
        amount: (rows - 1) * 0.25,
      }]);
    });
  } finally {
    await server.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});
