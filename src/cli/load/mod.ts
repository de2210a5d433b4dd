/**
 * `deno task load`: streams a local JSON, CSV or spreadsheet file to a running service,
 * with a progress bar on standard error, and prints the service's answer.
 *
 * ```sh
 * deno task load -- people.csv --table people [--schema public] [--if-exists fail|replace|append]
 *   [--definition people.def.json] [--sheet NAME|INDEX] [--format EXT] [--url http://127.0.0.1:8080]
 *   [--token JWT] [--timeout SECONDS]
 * ```
 *
 * - Relative paths are read from `INIT_CWD` when it is set: `deno task` runs the command in
 *   the project's directory and names the directory it was run in there.
 * - FILE `-` is standard input, in the format `--format` names; it is sent chunked, with
 *   no `Content-Length`, since its size is unknown until it ends.
 * - The extension picks the endpoint: `.json` → `upload/json`; `.csv`, `.tsv`, `.txt` →
 *   `upload/csv`; `.xlsx`, `.xlsm`, `.xlsb`, `.xls`, `.ods` → `upload/excel` (multipart, the
 *   file in a part named `file`, `--definition` in a part named `body`).
 * - A `.json` file is either the upload envelope `{"table"?: …, "data": [ … ]}`, sent as it
 *   is, or a plain top-level array of rows, which is sent wrapped as `{"data": <file>}`
 *   (with `"table": <definition>` in front when `--definition` is given). Only the first
 *   bytes are looked at to tell the two apart; the file is never parsed here, so a file of
 *   any size streams. `--definition` with an envelope file is refused: the envelope carries
 *   its own `table`.
 * - `--definition FILE` holds `{"table": definition}` or the bare definition.
 * - `--url` defaults to `TABLE_SERVICE_URL`, then to `http://127.0.0.1:8080` (the service's
 *   default host and port); `--token` defaults to `TABLE_SERVICE_TOKEN`.
 * - `--timeout SECONDS` gives up once nothing has been sent or received for that long: a
 *   service that stopped reading the body or never answers. The default, 0, waits as long as
 *   it takes, as a large load may keep the service busy for minutes after the last byte.
 * - The body is never held whole in memory and is sent with its `Content-Length`, so the
 *   service can refuse an oversized file (413) before it arrives. Deno's `fetch` drops a
 *   caller's `Content-Length` on a stream body and sends it chunked (denoland/deno#24197),
 *   so the request goes through `node:http`.
 * - The answer goes to standard output as JSON (`{ table, inserted }`), one summary line to
 *   standard error. Exit code 0 on success, 1 when the service answers with an error or the
 *   file or the service cannot be reached, 2 for a wrong command line.
 *
 * Needs `--allow-env --allow-net --allow-read`. One file per job beside this entry: `args.ts`
 * (the command line and its help), `body.ts` (the file framed as its endpoint takes it),
 * `send.ts` (the request and its watchdog), `progress.ts` (the progress display), `answer.ts`
 * (error answers in words) and `error.ts` (the command's own failures). None imports from
 * `src/store/`: the command runs without FFI access.
 *
 * @module
 */

import { ConfigError } from "../../config.ts";
import { failureLines } from "./answer.ts";
import { HELP, type LoadOptions, parseLoadArgs, uploadUrl, USAGE } from "./args.ts";
import { prepareBody } from "./body.ts";
import { LoadError } from "./error.ts";
import { formatBytes, Progress } from "./progress.ts";
import { type Answer, post, unreachable } from "./send.ts";

/** Runs the command on `args`; resolves to its exit code. */
async function main(args: string[]): Promise<number> {
  // Before the checks, so that a half-written command line still gets the help it asks for.
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  let options: LoadOptions;
  try {
    options = parseLoadArgs(args, Deno.env.toObject());
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`error: ${error.problems.join("; ")}\n${USAGE}`);
    return 2;
  }
  try {
    const { contentType, length, body } = await prepareBody(options);
    const headers: Record<string, string> = {
      "content-type": contentType,
      accept: "application/json",
    };
    if (length !== undefined) headers["content-length"] = String(length);
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey;

    const progress = new Progress(length, {
      write: (text) => Deno.stderr.writeSync(new TextEncoder().encode(text)),
      terminal: Deno.stderr.isTerminal(),
    });
    const started = performance.now();
    let sent = 0;
    let answer: Answer;
    try {
      answer = await post(
        uploadUrl(options),
        headers,
        body,
        (bytes) => {
          sent += bytes;
          progress.update(sent);
        },
        () => progress.finish(sent),
        options.timeout,
      );
    } catch (error) {
      throw unreachable(error, options);
    } finally {
      progress.stop();
    }

    let result: { table?: { name?: string; schema?: string }; inserted?: number } | undefined;
    try {
      result = JSON.parse(answer.text);
    } catch {
      // Reported below as not JSON.
    }
    if (answer.status !== 200 || typeof result?.inserted !== "number" || "error" in result) {
      for (const line of failureLines(answer.status, answer.contentType, answer.text, options)) {
        console.error(line);
      }
      return 1;
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.error(
      `loaded ${result.inserted} rows into ${result.table?.schema}.${result.table?.name} ` +
        `(${formatBytes(sent)} in ${seconds} s)`,
    );
    console.log(JSON.stringify(result, null, 2));
    return 0;
  } catch (error) {
    if (!(error instanceof LoadError)) throw error;
    console.error(`error: ${error.message}`);
    if (error.hint !== undefined) console.error(`hint: ${error.hint}`);
    return 1;
  }
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (error) {
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    code = 1;
  }
  // An idle keep-alive socket must not hold the process open.
  Deno.exit(code);
}
