import assert from "node:assert/strict";
import * as XLSX from "xlsx";
import {
  bodyStream,
  failureLines,
  formatBytes,
  formatDuration,
  formatProgress,
  type Framing,
  jsonFraming,
  LOAD_FLAGS,
  LOAD_VARIABLES,
  LoadError,
  multipartFraming,
  parseLoadArgs,
  Progress,
  uploadKind,
  uploadUrl,
} from "../src/load_cli.ts";
import { ConfigError } from "../src/config.ts";
import { mint, ok, TestServer } from "./helpers/server.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------
// Pure parts
// ---------------------------------------------------------------------------------------

Deno.test("uploadKind() picks the endpoint by extension, in any letter case", () => {
  assert.equal(uploadKind("rows.json"), "json");
  for (const name of ["a.csv", "a.tsv", "a.txt", "dir.v2/A.CSV"]) {
    assert.equal(uploadKind(name), "csv");
  }
  for (const ext of ["xlsx", "xlsm", "xlsb", "xls", "ods", "XLSX"]) {
    assert.equal(uploadKind(`book.${ext}`), "excel");
  }
  for (const name of ["data.parquet", "noext", "archive.json.gz"]) {
    assert.equal(uploadKind(name), undefined);
  }
});

Deno.test("parseLoadArgs() takes defaults from the environment and flags over them", () => {
  const plain = parseLoadArgs(["--", "p.csv", "--table", "people"], {});
  assert.equal(plain.url, "http://127.0.0.1:8080");
  assert.equal(plain.ifExists, "fail");
  assert.equal(plain.token, undefined);
  assert.equal(plain.schema, undefined);
  assert.equal(plain.timeout, 0);
  assert.equal(parseLoadArgs(["p.csv", "--table", "t", "--timeout", "2.5"], {}).timeout, 2.5);

  const env = { TABLE_SERVICE_URL: "http://svc:9000/", TABLE_SERVICE_TOKEN: "from-env" };
  const fromEnv = parseLoadArgs(["p.csv", "--table", "people"], env);
  assert.equal(fromEnv.url, "http://svc:9000");
  assert.equal(fromEnv.token, "from-env");

  const flags = parseLoadArgs(
    ["p.csv", "-t", "people", "--url", "https://h/prefix/api/v1/", "--token", "flag"],
    env,
  );
  assert.equal(flags.url, "https://h/prefix");
  assert.equal(flags.token, "flag");
  // A blank variable counts as unset.
  assert.equal(parseLoadArgs(["p.csv", "--table", "t"], { TABLE_SERVICE_URL: " " }).url, plain.url);
});

Deno.test("parseLoadArgs() reads relative paths from INIT_CWD, where deno task was run", () => {
  const args = ["rows/p.csv", "--table", "t", "--definition", "../p.def.json"];
  const fromTask = parseLoadArgs(args, { INIT_CWD: "/home/ada/work" });
  assert.equal(fromTask.file, "/home/ada/work/rows/p.csv");
  assert.equal(fromTask.definition, "/home/ada/p.def.json");
  const absolute = parseLoadArgs(["/srv/p.csv", "--table", "t"], { INIT_CWD: "/home/ada" });
  assert.equal(absolute.file, "/srv/p.csv");
  // Run directly, a relative path is the process's own business.
  assert.equal(parseLoadArgs(args, {}).file, "rows/p.csv");
});

Deno.test("parseLoadArgs() takes - as standard input, its format from --format", () => {
  const stdin = parseLoadArgs(["-", "--table", "t", "--format", "json"], { INIT_CWD: "/x" });
  assert.equal(stdin.file, "-");
  assert.equal(stdin.kind, "json");
  assert.equal(parseLoadArgs(["-", "--table", "t", "--format", "XLSX"], {}).kind, "excel");
  // --format also overrides a file's extension.
  assert.equal(parseLoadArgs(["dump.out", "--table", "t", "--format", "csv"], {}).kind, "csv");
  assert.throws(
    () => parseLoadArgs(["-", "--table", "t"], {}),
    (error: ConfigError) => {
      assert.deepEqual(error.problems, [
        "standard input (-) needs --format, one of json csv tsv txt xlsx xlsm xlsb xls ods",
      ]);
      return true;
    },
  );
  assert.throws(
    () => parseLoadArgs(["-", "--table", "t", "--format", "parquet"], {}),
    /--format "parquet" is not one of json csv/,
  );
});

Deno.test("uploadUrl() builds the endpoint and query for each kind of file", () => {
  const url = (args: string[]) => uploadUrl(parseLoadArgs(args, {}));
  assert.equal(
    url(["rows.json", "--table", "t"]),
    "http://127.0.0.1:8080/api/v1/table/t/upload/json?if_exists=fail",
  );
  assert.equal(
    url(["rows.CSV", "--table", "t", "--schema", "sales", "--if-exists", "replace"]),
    "http://127.0.0.1:8080/api/v1/table/t/upload/csv?schema=sales&if_exists=replace",
  );
  assert.equal(
    url(["b.ods", "--table", "t", "--if-exists", "append", "--sheet", "Q 1"]),
    "http://127.0.0.1:8080/api/v1/table/t/upload/excel?if_exists=append&sheet=Q+1",
  );
  // Names are left to the server to judge, but they cannot break out of the path.
  assert.equal(
    url(["a.csv", "--table", "x/../y?z"]),
    "http://127.0.0.1:8080/api/v1/table/x%2F..%2Fy%3Fz/upload/csv?if_exists=fail",
  );
});

Deno.test("parseLoadArgs() reports every problem of a command line at once", () => {
  const problems = (args: string[]): readonly string[] => {
    try {
      parseLoadArgs(args, {});
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.problems;
    }
    throw new Error("no problem reported");
  };
  const all = problems(
    ["data.parquet", "--if-exists", "maybe", "--url", "ftp://x", "--timeout=-1"],
  );
  assert.equal(all.length, 5, all.join("\n"));
  assert.match(all.join("\n"), /--timeout "-1" is not a number of seconds \(0: no limit\)/);
  assert.match(all.join("\n"), /"data\.parquet" has an unknown extension; use one of \.json/);
  assert.match(all.join("\n"), /missing --table NAME/);
  assert.match(all.join("\n"), /--if-exists "maybe" is not one of fail, replace, append/);
  assert.match(all.join("\n"), /--url "ftp:\/\/x" is not an http/);
  assert.deepEqual(problems(["--table", "t"]), ["missing FILE"]);
  assert.match(problems(["a.csv", "b.csv", "--table", "t"])[0]!, /one FILE at a time/);
  assert.match(problems(["a.csv", "--table", "t", "--sheet", "1"])[0]!, /spreadsheets only/);
  assert.match(problems(["a.csv", "--table", "t", "--force"])[0]!, /--force/);
  assert.match(problems(["a.csv", "--table"])[0]!, /--table/);
  for (const bad of ["soon", "", "1e3", "Infinity"]) {
    assert.match(problems(["a.csv", "--table", "t", "--timeout", bad])[0]!, /--timeout/);
  }
});

/** Everything a body stream produces. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A temp file holding `bytes`, open for reading. */
async function openWith(dir: string, name: string, bytes: Uint8Array): Promise<Deno.FsFile> {
  await Deno.writeFile(`${dir}/${name}`, bytes);
  return await Deno.open(`${dir}/${name}`);
}

Deno.test("multipartFraming() with bodyStream() gives well-formed multipart of the announced length", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Content that looks like framing must come through untouched.
    const content = encoder.encode('a,b\r\n--not-the-boundary\r\n1,"x\r\ny"\r\n'.repeat(5000));
    const file = await openWith(dir, "data.csv", content);
    const definition = '{"table":{"columns":[{"name":"a","type":"integer"}]}}';
    const framing = multipartFraming("----b0und4ry", "Zahlen – März.csv", "text/csv", definition);
    const announced = framing.head.length + content.length + framing.tail.length;
    const bytes = await drain(bodyStream(file, content.length, framing));
    assert.equal(bytes.length, announced);

    const form = await new Request("http://x/", {
      method: "POST",
      body: bytes as Uint8Array<ArrayBuffer>,
      headers: { "content-type": framing.contentType },
    }).formData();
    const part = form.get("file") as File;
    assert.equal(part.name, "Zahlen – März.csv");
    assert.equal(part.type, "text/csv");
    assert.deepEqual(new Uint8Array(await part.arrayBuffer()), content);
    assert.equal(form.get("body"), definition);

    const bare = multipartFraming("B", 'we"ird\r\n.csv', "text/csv");
    assert.match(decoder.decode(bare.head), /filename="we%22ird%0D%0A\.csv"\r\n/);
    assert.doesNotMatch(decoder.decode(bare.head), /name="body"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("jsonFraming() wraps a top-level array as the envelope and sends an envelope as it is", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases: [string, string, string | undefined, unknown][] = [
      ["array", ' \n[{"id": 1}, {"id": 2}]\n', undefined, { data: [{ id: 1 }, { id: 2 }] }],
      [
        "array with a byte order mark and a definition",
        '\uFEFF[[1, "a"]]',
        '{"columns":[{"name":"id","type":"integer"},{"name":"n","type":"text"}]}',
        {
          table: { columns: [{ name: "id", type: "integer" }, { name: "n", type: "text" }] },
          data: [[1, "a"]],
        },
      ],
      ["envelope", '{"data": [{"id": 1}]}', undefined, { data: [{ id: 1 }] }],
    ];
    for (const [name, text, definition, expected] of cases) {
      const bytes = encoder.encode(text);
      const framing = jsonFraming(bytes, definition);
      const file = await openWith(dir, "rows.json", bytes);
      await file.seek(framing.skip, Deno.SeekMode.Start);
      const fileBytes = bytes.length - framing.skip;
      const body = await drain(bodyStream(file, fileBytes, framing));
      assert.equal(body.length, framing.head.length + fileBytes + framing.tail.length, name);
      assert.deepEqual(JSON.parse(decoder.decode(body)), expected, name);
    }
    assert.throws(
      () => jsonFraming(encoder.encode('{"data": []}'), "{}"),
      (error) => error instanceof LoadError && /envelope/.test(error.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bodyStream() fails when the file does not match the announced length", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const none: Framing = {
      contentType: "x",
      head: new Uint8Array(0),
      tail: new Uint8Array(0),
      skip: 0,
    };
    const grown = await openWith(dir, "a", new Uint8Array(100));
    await assert.rejects(drain(bodyStream(grown, 50, none)), /grew/);
    const shrunk = await openWith(dir, "b", new Uint8Array(10));
    await assert.rejects(drain(bodyStream(shrunk, 50, none)), /shrank/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("formatProgress() shows bytes, percent, rate and time left, then the time taken", () => {
  assert.equal(
    formatProgress(5_000_000, 20_000_000, 1000),
    "[######------------------]  25%  5.0 MB / 20.0 MB  5.0 MB/s  0:03 left",
  );
  assert.equal(
    formatProgress(0, 20_000_000, 0),
    "[------------------------]   0%  0 B / 20.0 MB  0 B/s  --:-- left",
  );
  assert.equal(
    formatProgress(20_000_000, 20_000_000, 4000),
    "[########################] 100%  20.0 MB / 20.0 MB  5.0 MB/s  sent in 4.0 s",
  );
  assert.ok(formatProgress(0, 0, 10).includes("100%  0 B / 0 B"));
  assert.equal(formatBytes(999), "999 B");
  assert.equal(formatBytes(1_234), "1.2 kB");
  assert.equal(formatDuration(59.5), "1:00");
  assert.equal(formatDuration(Infinity), "--:--");
});

Deno.test("Progress redraws a terminal line at most ten times a second", () => {
  const writes: string[] = [];
  let clock = 0;
  const total = 100_000_000;
  const progress = new Progress(total, {
    write: (text) => writes.push(text),
    terminal: true,
    now: () => clock,
  });
  // 2000 chunks over two seconds.
  for (let i = 1; i < 2000; i++) {
    clock += 1;
    progress.update((total / 2000) * i);
  }
  assert.ok(writes.length >= 18 && writes.length <= 20, `${writes.length} redraws`);
  assert.ok(writes.every((w) => w.startsWith("\r") && w.endsWith("\x1b[K")));
  progress.finish(total);
  assert.ok(writes.at(-1)!.startsWith(`\r[${"#".repeat(24)}] 100% `));
  assert.ok(writes.at(-1)!.endsWith("sent in 2.0 s\x1b[K\n"));
  progress.stop(); // Nothing more after the final line.
  assert.equal(writes.at(-1)!.endsWith("\n"), true);
});

Deno.test("Progress prints a few plain lines when standard error is not a terminal", () => {
  let out = "";
  let clock = 0;
  const progress = new Progress(8_000_000, {
    write: (text) => out += text,
    terminal: false,
    now: () => clock,
  });
  for (let sent = 65536; sent < 8_000_000; sent += 65536) {
    clock += 1;
    progress.update(sent);
  }
  progress.finish(8_000_000);
  const lines = out.split("\n").filter(Boolean);
  assert.equal(lines.length, 4, out);
  assert.ok(!out.includes("\r"));
  assert.match(lines[0]!, / 25% /);
  assert.match(lines[3]!, / 100% /);

  // A small body gets only its final line; an upload that stops early leaves no line open.
  let small = "";
  const quick = new Progress(500, { write: (t) => small += t, terminal: true, now: () => clock });
  clock += 1000;
  quick.update(250);
  quick.stop();
  assert.equal(small, "");
});

Deno.test("failureLines() names the status, the service's message, details and a hint", () => {
  const options = parseLoadArgs(["p.csv", "--table", "people", "--schema", "sales"], {});
  const error = (code: number, message: string, details?: unknown[]) =>
    JSON.stringify({ error: { code, type: "x", message, details } });

  const conflict = failureLines(409, "application/json", error(409, "Table exists"), options);
  assert.deepEqual(conflict, [
    "error 409: Table exists",
    'hint: table "people" already exists; pass --if-exists replace to replace it or ' +
    "--if-exists append to add the rows",
  ]);
  const appending = parseLoadArgs(["p.csv", "--table", "t", "--if-exists", "append"], {});
  assert.deepEqual(failureLines(409, "application/json", error(409, "Key conflict"), appending), [
    "error 409: Key conflict",
  ]);
  assert.match(failureLines(401, "", error(401, "Expired"), options)[1]!, /TABLE_SERVICE_TOKEN/);
  assert.match(failureLines(403, "", error(403, "No"), options)[1]!, /schema "sales"/);
  assert.match(failureLines(413, "", error(413, "Big"), options)[1]!, /MAX_UPLOAD_BYTES/);

  const details = Array.from({ length: 7 }, (_, i) => ({
    row: i,
    column: "price",
    message: "not a number",
  }));
  const invalid = failureLines(422, "application/json", error(422, "Bad rows", details), options);
  assert.equal(invalid[0], "error 422: Bad rows");
  assert.equal(invalid[1], '  row 0, column "price": not a number');
  assert.equal(invalid[6], "  … and 2 more");
  assert.match(invalid[7]!, /^hint: /);

  const html = failureLines(502, "text/html", "<html>\n<b>Bad Gateway</b></html>", options);
  assert.equal(
    html[0],
    "error 502: the answer from http://127.0.0.1:8080 is not JSON (text/html): " +
      "<html> <b>Bad Gateway</b></html>",
  );
});

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
    args: ["run", "--allow-env", "--allow-net", "--allow-read", `${ROOT}src/load_cli.ts`, ...args],
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
        ["INTEGER", "DATE"],
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
