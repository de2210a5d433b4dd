import assert from "node:assert/strict";
import { TestServer } from "./helpers/server.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** The address the examples are written for. */
const DOCUMENTED_ORIGIN = "http://127.0.0.1:8080";

/** The shell blocks of a Markdown text, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

Deno.test("shellBlocks() finds each sh block and nothing else", () => {
  const text = "a\n```sh\necho 1\n```\n```json\n{}\n```\n```sh\necho 2\necho 3\n```\n";
  assert.deepEqual(shellBlocks(text), ["echo 1\n", "echo 2\necho 3\n"]);
});

Deno.test("every curl example of docs/examples.md answers 2xx against a fresh service", async () => {
  const blocks = shellBlocks(await Deno.readTextFile(`${ROOT}docs/examples.md`));
  assert.ok(blocks.length >= 10, `only ${blocks.length} examples`);
  const server = await TestServer.start();
  const cwd = await Deno.makeTempDir({ prefix: "table-service-examples-" });
  try {
    // The spreadsheet the upload example names is the user's own; here, a real one.
    await Deno.copyFile(`${ROOT}tests/fixtures/workbook.xlsx`, `${cwd}/people.xlsx`);
    // One shell, so the first block's variables hold for the rest; curl fails on any 4xx or
    // 5xx, and a marker names the block that did. A failure inside a pipe (`curl … | head`)
    // leaves no exit status behind, so curl also notes it in a file; a reader that stops
    // early (curl's 23, "failed writing body") is not a failure of the service.
    const script = [
      "set -e",
      'curl() { command curl --fail-with-body --show-error "$@" || { status=$?; ' +
      '[ "$status" -eq 23 ] || echo "curl $* exited $status" >> curl-failures; ' +
      'return "$status"; }; echo; }',
      ...blocks.map((block, index) => `echo "@@ block ${index + 1}" >&2\n${block}`),
    ].join("\n").replaceAll(DOCUMENTED_ORIGIN, server.base);
    const run = await new Deno.Command("bash", {
      args: ["-c", script],
      cwd,
      env: { TOKEN: server.token },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(run.stdout);
    const stderr = new TextDecoder().decode(run.stderr);
    const failed = stderr.match(/@@ block \d+/g)?.at(-1);
    assert.equal(run.code, 0, `${failed} failed:\n${stderr}\n${stdout.slice(-2000)}`);
    const piped = await Deno.readTextFile(`${cwd}/curl-failures`).catch(() => "");
    assert.equal(piped, "", `a curl inside a pipe failed:\n${stderr}`);
    assert.equal(stderr.match(/@@ block \d+/g)?.length, blocks.length);
    // The CSV export example wrote the rows the insert example sent.
    const csv = await Deno.readTextFile(`${cwd}/orders.csv`);
    assert.match(csv, /^id,customer,qty,placed\r?\n1,Ada,2,/);
    // The timestamped export was saved under its own name, after the retried batch, which
    // went in once; and the ETag example got its 304.
    const saved = [...Deno.readDirSync(cwd)].map((entry) => entry.name);
    const stamped = saved.find((name) => /^orders_\d{8}_\d{6}\.csv$/.test(name));
    assert.ok(stamped, saved.join(", "));
    assert.equal((await Deno.readTextFile(`${cwd}/${stamped}`)).match(/Edsger/g)?.length, 1);
    assert.match(stdout, /^304$/m);
  } finally {
    await server.dispose();
    await Deno.remove(cwd, { recursive: true });
  }
});
