import assert from "node:assert/strict";
import { ConfigError } from "../../config.ts";
import { parseLoadArgs, uploadKind, uploadUrl } from "./args.ts";

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
    url(["b.ods", "--table", "t", "--if-exists", "Append", "--sheet", "Q 1"]),
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
