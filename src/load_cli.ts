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
 * Needs `--allow-env --allow-net --allow-read`.
 *
 * @module
 */

import http from "node:http";
import https from "node:https";
import { basename, extname, resolve } from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { IF_EXISTS, type IfExists } from "./catalog/uploads.ts";
import { ConfigError } from "./config.ts";

/** The service's address when neither `--url` nor `TABLE_SERVICE_URL` is given. */
export const DEFAULT_URL = "http://127.0.0.1:8080";

/** The upload endpoint a file goes to. */
export type UploadKind = "json" | "csv" | "excel";

/** The one-line usage, printed with every command-line error. */
export const USAGE = "usage: deno task load -- FILE --table NAME [--schema S] " +
  "[--if-exists fail|replace|append] [--definition FILE.json] [--sheet NAME|INDEX] " +
  "[--format EXT] [--url URL] [--token T] [--timeout SECONDS]";

/** FILE that stands for standard input. */
export const STDIN = "-";

/** The command line's flags, as `parseArgs` takes them; {@link HELP} describes each. */
export const LOAD_FLAGS = {
  table: { type: "string", short: "t" },
  schema: { type: "string", short: "s" },
  "if-exists": { type: "string", default: "fail" },
  definition: { type: "string" },
  sheet: { type: "string" },
  format: { type: "string" },
  url: { type: "string" },
  token: { type: "string" },
  timeout: { type: "string", default: "0" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

/**
 * The environment variables the command reads: {@link parseLoadArgs} can see no other, and
 * {@link HELP} describes each.
 */
export const LOAD_VARIABLES = ["TABLE_SERVICE_URL", "TABLE_SERVICE_TOKEN", "INIT_CWD"] as const;

/** The environment as {@link parseLoadArgs} reads it. */
export type LoadEnv = Readonly<Partial<Record<typeof LOAD_VARIABLES[number], string>>>;

/** What `--help` prints. */
export const HELP = `usage: deno task load -- FILE --table NAME [options]

Streams a JSON, CSV or spreadsheet file to the table service and prints its answer as JSON.
The extension picks the upload: .json; .csv .tsv .txt; .xlsx .xlsm .xlsb .xls .ods.
FILE - reads standard input, in the format --format names.

options:
  -t, --table NAME         the table to load into (required)
  -s, --schema NAME        its schema (default: the service's, public)
      --if-exists MODE     when the table exists: fail (default), replace or append
      --definition FILE    the table's definition: {"table": definition} or the definition
      --sheet NAME|INDEX   the sheet of a spreadsheet (default: the first)
      --format EXT         the format when the extension does not say it, and for -:
                           one of json csv tsv txt xlsx xlsm xlsb xls ods
      --url URL            the service (default: TABLE_SERVICE_URL, then http://127.0.0.1:8080)
      --token JWT          the bearer token (default: TABLE_SERVICE_TOKEN)
      --timeout SECONDS    give up once nothing was sent or received for that long
                           (default: 0, wait as long as it takes)
  -h, --help               this help

environment:
  TABLE_SERVICE_URL        the service's URL, when --url is not given
  TABLE_SERVICE_TOKEN      the token, when --token is not given; other users cannot read
                           it in the process list, as they can --token
  INIT_CWD                 the directory relative paths are read from; deno task sets it to
                           the directory it was run in

exit codes: 0 loaded; 1 an error answer, an unreadable file, an unreachable service or a
timeout; 2 a wrong command line.`;

/** Extensions and the endpoint and part content type of each. */
const EXTENSIONS: Record<string, { kind: UploadKind; type: string }> = {
  ".json": { kind: "json", type: "application/json" },
  ".csv": { kind: "csv", type: "text/csv" },
  ".tsv": { kind: "csv", type: "text/tab-separated-values" },
  ".txt": { kind: "csv", type: "text/plain" },
  ".xlsx": {
    kind: "excel",
    type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  },
  ".xlsm": { kind: "excel", type: "application/vnd.ms-excel.sheet.macroEnabled.12" },
  ".xlsb": { kind: "excel", type: "application/vnd.ms-excel.sheet.binary.macroEnabled.12" },
  ".xls": { kind: "excel", type: "application/vnd.ms-excel" },
  ".ods": { kind: "excel", type: "application/vnd.oasis.opendocument.spreadsheet" },
};

/** A command line, checked. */
export interface LoadOptions {
  /** The file's path ({@link STDIN} for standard input), resolved from `INIT_CWD`. */
  readonly file: string;
  readonly kind: UploadKind;
  /** The extension, with its dot, that gives the file's format. */
  readonly extension: string;
  readonly table: string;
  readonly schema?: string;
  readonly ifExists: IfExists;
  /** The service's base URL, without a trailing slash. */
  readonly url: string;
  readonly token?: string;
  readonly definition?: string;
  readonly sheet?: string;
  /** Seconds with nothing sent or received before giving up; 0 for no limit. */
  readonly timeout: number;
}

/** A local failure: a file that cannot be read, a service that cannot be reached. */
export class LoadError extends Error {
  constructor(message: string, readonly hint?: string) {
    super(message);
    this.name = "LoadError";
  }
}

/**
 * The endpoint a file goes to, by its extension (any letter case); undefined for an
 * extension the service does not take.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { uploadKind } from "./load_cli.ts";
 *
 * assert.equal(uploadKind("rows.json"), "json");
 * assert.equal(uploadKind("Sales.TSV"), "csv");
 * assert.equal(uploadKind("book.xlsx"), "excel");
 * assert.equal(uploadKind("data.parquet"), undefined);
 * ```
 */
export function uploadKind(file: string): UploadKind | undefined {
  return EXTENSIONS[extname(file).toLowerCase()]?.kind;
}

/**
 * Checks a command line (`--` entries are ignored, as `deno task` passes them on) against
 * the environment's defaults; a {@link ConfigError} names every problem at once. Relative
 * paths are resolved from `INIT_CWD` when it is set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseLoadArgs } from "./load_cli.ts";
 *
 * const options = parseLoadArgs(["--", "p.csv", "--table", "people"], {
 *   TABLE_SERVICE_TOKEN: "eyJ…",
 * });
 * assert.equal(options.kind, "csv");
 * assert.equal(options.ifExists, "fail");
 * assert.equal(options.url, "http://127.0.0.1:8080");
 * assert.equal(options.token, "eyJ…");
 * assert.throws(() => parseLoadArgs(["p.csv"], {}), /missing --table/);
 * ```
 */
export function parseLoadArgs(args: readonly string[], env: LoadEnv): LoadOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: args.filter((a) => a !== "--"),
      options: LOAD_FLAGS,
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new ConfigError([error instanceof Error ? error.message : String(error)]);
  }
  const { values, positionals } = parsed;
  const problems: string[] = [];

  const file = positionals[0];
  if (file === undefined) problems.push("missing FILE");
  if (positionals.length > 1) {
    problems.push(`one FILE at a time; got ${positionals.map((p) => `"${p}"`).join(", ")}`);
  }
  const formats = Object.keys(EXTENSIONS).map((e) => e.slice(1)).join(" ");
  const extension = values.format === undefined
    ? file === undefined || file === STDIN ? undefined : extname(file).toLowerCase()
    : `.${values.format.toLowerCase()}`;
  const kind = extension === undefined ? undefined : EXTENSIONS[extension]?.kind;
  if (values.format !== undefined && kind === undefined) {
    problems.push(`--format "${values.format}" is not one of ${formats}`);
  } else if (file === STDIN && kind === undefined) {
    problems.push(`standard input (${STDIN}) needs --format, one of ${formats}`);
  } else if (file !== undefined && kind === undefined) {
    problems.push(
      `"${file}" has an unknown extension; use one of ${Object.keys(EXTENSIONS).join(" ")}` +
        ", or give --format",
    );
  }
  if (values.table === undefined || values.table === "") problems.push("missing --table NAME");

  const ifExists = values["if-exists"];
  if (!(IF_EXISTS as readonly string[]).includes(ifExists)) {
    problems.push(`--if-exists "${ifExists}" is not one of ${IF_EXISTS.join(", ")}`);
  }
  if (values.sheet !== undefined && kind !== undefined && kind !== "excel") {
    problems.push("--sheet applies to spreadsheets only");
  }

  const rawUrl = values.url ?? nonEmpty(env.TABLE_SERVICE_URL) ?? DEFAULT_URL;
  const url = parseBaseUrl(rawUrl);
  if (url === undefined) problems.push(`--url "${rawUrl}" is not an http:// or https:// URL`);
  const timeout = /^\d+(\.\d+)?$/.test(values.timeout.trim()) ? Number(values.timeout) : NaN;
  if (!Number.isFinite(timeout)) {
    problems.push(`--timeout "${values.timeout}" is not a number of seconds (0: no limit)`);
  }

  if (problems.length > 0) throw new ConfigError(problems);
  const token = values.token ?? nonEmpty(env.TABLE_SERVICE_TOKEN);
  // deno task runs the command in the project's directory, not the user's.
  const from = nonEmpty(env.INIT_CWD);
  const local = (path: string) => from === undefined || path === STDIN ? path : resolve(from, path);
  return {
    file: local(file!),
    kind: kind!,
    extension: extension!,
    table: values.table!,
    ifExists: ifExists as LoadOptions["ifExists"],
    url: url!,
    timeout,
    ...(values.schema === undefined ? {} : { schema: values.schema }),
    ...(token === undefined ? {} : { token }),
    ...(values.definition === undefined ? {} : { definition: local(values.definition) }),
    ...(values.sheet === undefined ? {} : { sheet: values.sheet }),
  };
}

/**
 * The request URL of an upload: the endpoint for the file's kind, with `schema` (when
 * given), `if_exists` and `sheet` (when given) in the query.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseLoadArgs, uploadUrl } from "./load_cli.ts";
 *
 * const options = parseLoadArgs(
 *   ["b.xlsx", "--table", "t", "--schema", "sales", "--if-exists", "append", "--sheet", "Q1"],
 *   { TABLE_SERVICE_URL: "http://db.example:9000/" },
 * );
 * assert.equal(
 *   uploadUrl(options),
 *   "http://db.example:9000/api/v1/table/t/upload/excel?schema=sales&if_exists=append&sheet=Q1",
 * );
 * ```
 */
export function uploadUrl(options: LoadOptions): string {
  const query = new URLSearchParams();
  if (options.schema !== undefined) query.set("schema", options.schema);
  query.set("if_exists", options.ifExists);
  if (options.sheet !== undefined) query.set("sheet", options.sheet);
  return `${options.url}/api/v1/table/${encodeURIComponent(options.table)}/upload/` +
    `${options.kind}?${query}`;
}

/** What goes around the file's bytes in a request body. */
export interface Framing {
  /** The body's content type. */
  readonly contentType: string;
  /** Bytes before the file. */
  readonly head: Uint8Array;
  /** Bytes after the file. */
  readonly tail: Uint8Array;
  /** Leading bytes of the file to leave out (a byte order mark). */
  readonly skip: number;
}

/**
 * The multipart framing of a file upload: an optional `body` part (`definition`, JSON
 * text), then the `file` part's headers before the file and the closing boundary after it.
 * The body's length is `head.length + fileBytes + tail.length`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { multipartFraming } from "./load_cli.ts";
 *
 * const framing = multipartFraming("XyZ", "a.csv", "text/csv");
 * assert.equal(framing.contentType, "multipart/form-data; boundary=XyZ");
 * assert.equal(
 *   new TextDecoder().decode(framing.head),
 *   '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n' +
 *     "Content-Type: text/csv\r\n\r\n",
 * );
 * assert.equal(new TextDecoder().decode(framing.tail), "\r\n--XyZ--\r\n");
 * ```
 */
export function multipartFraming(
  boundary: string,
  filename: string,
  fileType: string,
  definition?: string,
): Framing {
  // Quotes and line breaks in a file name are percent-encoded, as browsers do.
  const quoted = filename.replaceAll('"', "%22").replaceAll("\r", "%0D").replaceAll("\n", "%0A");
  const body = definition === undefined ? "" : `--${boundary}\r\n` +
    'Content-Disposition: form-data; name="body"\r\n' +
    `Content-Type: application/json\r\n\r\n${definition}\r\n`;
  const encoder = new TextEncoder();
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    head: encoder.encode(
      `${body}--${boundary}\r\n` +
        `Content-Disposition: form-data; name="file"; filename="${quoted}"\r\n` +
        `Content-Type: ${fileType}\r\n\r\n`,
    ),
    tail: encoder.encode(`\r\n--${boundary}--\r\n`),
    skip: 0,
  };
}

/**
 * The framing of a `.json` file from its first bytes: an envelope object is sent as it is;
 * a top-level array is wrapped as `{"data": …}` (`{"table": definition, "data": …}` with a
 * definition). A byte order mark is left out. Throws a {@link LoadError} for a definition
 * next to an envelope, which has its own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonFraming } from "./load_cli.ts";
 *
 * const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
 * const array = jsonFraming(new TextEncoder().encode('  [{"id": 1}]'));
 * assert.equal(text(array.head), '{"data":');
 * assert.equal(text(array.tail), "}");
 * const envelope = jsonFraming(new TextEncoder().encode('{"data": []}'));
 * assert.equal(envelope.head.length + envelope.tail.length, 0);
 * ```
 */
export function jsonFraming(leading: Uint8Array, definition?: string): Framing {
  const bom = leading[0] === 0xef && leading[1] === 0xbb && leading[2] === 0xbf ? 3 : 0;
  let at = bom;
  while (at < leading.length && [0x20, 0x09, 0x0a, 0x0d].includes(leading[at]!)) at++;
  const encoder = new TextEncoder();
  const contentType = "application/json";
  if (leading[at] === 0x5b /* [ */) {
    const table = definition === undefined ? "" : `"table":${definition},`;
    return {
      contentType,
      head: encoder.encode(`{${table}"data":`),
      tail: encoder.encode("}"),
      skip: bom,
    };
  }
  if (definition !== undefined) {
    throw new LoadError(
      "--definition applies to a JSON file that holds an array of rows; " +
        'this file is an upload envelope: put the definition in its "table" key',
    );
  }
  return { contentType, head: new Uint8Array(0), tail: new Uint8Array(0), skip: bom };
}

/**
 * The bytes of a request body: `framing.head`, then `bytes` bytes of `file` from its
 * current position, then `framing.tail`. The file is closed when the stream ends or is
 * cancelled; a file that grows or shrinks meanwhile errors the stream, since the length
 * was announced. With `bytes` undefined (standard input) the file is sent to its end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bodyStream, multipartFraming } from "./load_cli.ts";
 *
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "a,b\n1,2\n");
 * const framing = multipartFraming("b0undary", "t.csv", "text/csv");
 * const body = bodyStream(await Deno.open(path), 8, framing);
 * const form = await new Request("http://x/", {
 *   method: "POST",
 *   body,
 *   headers: { "content-type": framing.contentType },
 * }).formData();
 * assert.equal(await (form.get("file") as File).text(), "a,b\n1,2\n");
 * await Deno.remove(path);
 * ```
 */
export function bodyStream(
  file: { readonly readable: ReadableStream<Uint8Array> },
  bytes: number | undefined,
  framing: Framing,
): ReadableStream<Uint8Array> {
  async function* chunks(): AsyncGenerator<Uint8Array> {
    if (framing.head.length > 0) yield framing.head;
    let left = bytes ?? Infinity;
    // file.readable closes the file when it ends or when this generator is returned early.
    for await (const chunk of file.readable) {
      if (chunk.length > left) throw new LoadError("The file grew while it was being sent");
      left -= chunk.length;
      yield chunk;
    }
    if (left > 0 && left !== Infinity) {
      throw new LoadError("The file shrank while it was being sent");
    }
    if (framing.tail.length > 0) yield framing.tail;
  }
  return ReadableStream.from(chunks());
}

/**
 * A byte count for people, in decimal units.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatBytes } from "./load_cli.ts";
 *
 * assert.equal(formatBytes(512), "512 B");
 * assert.equal(formatBytes(20_000_000), "20.0 MB");
 * assert.equal(formatBytes(1_500_000_000), "1.50 GB");
 * ```
 */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${Math.round(bytes)} B`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} kB`;
  if (bytes < 1e9) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e9).toFixed(2)} GB`;
}

/**
 * A duration in seconds as `m:ss` or `h:mm:ss`; `--:--` when unknown.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatDuration } from "./load_cli.ts";
 *
 * assert.equal(formatDuration(5.2), "0:06");
 * assert.equal(formatDuration(3725), "1:02:05");
 * assert.equal(formatDuration(undefined), "--:--");
 * ```
 */
export function formatDuration(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return "--:--";
  const whole = Math.ceil(Math.max(0, seconds));
  const h = Math.floor(whole / 3600);
  const m = Math.floor(whole / 60) % 60;
  const s = String(whole % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/**
 * One progress line: a bar, the percentage, bytes sent of the total, the rate and the time
 * left at that rate. Without a total (standard input) only the bytes sent and the rate,
 * and the time taken once `finished`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatProgress } from "./load_cli.ts";
 *
 * assert.equal(
 *   formatProgress(10_000_000, 20_000_000, 2000),
 *   "[############------------]  50%  10.0 MB / 20.0 MB  5.0 MB/s  0:02 left",
 * );
 * assert.equal(formatProgress(10_000_000, undefined, 2000), "10.0 MB  5.0 MB/s");
 * ```
 */
export function formatProgress(
  sent: number,
  total: number | undefined,
  elapsedMs: number,
  finished = total !== undefined && sent >= total,
): string {
  const taken = `sent in ${
    // Elapsed time to a tenth under a minute: rounded up like the time left, a 0.2 s upload
    // would read "0:01".
    elapsedMs < 60_000 ? `${(elapsedMs / 1000).toFixed(1)} s` : formatDuration(elapsedMs / 1000)}`;
  const rate = elapsedMs > 0 ? sent / (elapsedMs / 1000) : 0;
  if (total === undefined) {
    return `${formatBytes(sent)}  ${formatBytes(rate)}/s${finished ? `  ${taken}` : ""}`;
  }
  const width = 24;
  const fraction = total > 0 ? Math.min(1, sent / total) : 1;
  const filled = Math.floor(fraction * width);
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
  const left = rate > 0 ? (total - sent) / rate : undefined;
  const time = finished ? taken : `${formatDuration(left)} left`;
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${percent}  ` +
    `${formatBytes(sent)} / ${formatBytes(total)}  ${formatBytes(rate)}/s  ${time}`;
}

/** Where {@link Progress} writes. */
export interface ProgressSink {
  write(text: string): void;
  /** A terminal gets one line redrawn in place; anything else a few plain lines. */
  readonly terminal: boolean;
  /** Milliseconds, for tests; `performance.now` by default. */
  readonly now?: () => number;
}

/** Smaller bodies go in a blink: they get the final line only. */
const STEPS_FROM_BYTES = 1_000_000;
/** Least time between two redraws on a terminal. */
const REDRAW_MS = 100;
/** Most time between two plain lines when not on a terminal. */
const PLAIN_LINE_MS = 10_000;

/**
 * A progress display of an upload of `total` bytes: on a terminal one line redrawn at most
 * ten times a second; elsewhere a plain line at each quarter (and every 10 s). A body under
 * 1 MB gets only the final line. Without a total (standard input), the terminal line is
 * redrawn as bytes go and plain lines come every 10 s.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Progress } from "./load_cli.ts";
 *
 * let out = "";
 * let clock = 0;
 * const total = 10_000_000;
 * const sink = { write: (t: string) => out += t, terminal: false, now: () => clock };
 * const progress = new Progress(total, sink);
 * for (let sent = total / 10; sent < total; sent += total / 10) {
 *   clock += 50;
 *   progress.update(sent);
 * }
 * progress.finish(total);
 * assert.equal(out.split("\n").filter(Boolean).length, 4); // 25%, 50%, 75%, 100%
 * ```
 */
export class Progress {
  readonly #total: number | undefined;
  readonly #sink: ProgressSink;
  readonly #now: () => number;
  readonly #started: number;
  #lastDraw: number;
  #nextQuarter = 1;
  #drawn = false;
  #done = false;

  constructor(total: number | undefined, sink: ProgressSink) {
    this.#total = total;
    this.#sink = sink;
    this.#now = sink.now ?? (() => performance.now());
    this.#started = this.#now();
    this.#lastDraw = this.#started;
  }

  /** Reports `sent` bytes so far; draws when it is time to. */
  update(sent: number): void {
    if (this.#done || (this.#total ?? Infinity) < STEPS_FROM_BYTES) return;
    const now = this.#now();
    if (this.#sink.terminal) {
      if (now - this.#lastDraw < REDRAW_MS) return;
      this.#draw(sent, now, false);
      return;
    }
    const quarter = this.#total === undefined
      ? 0
      : this.#total > 0
      ? Math.floor((sent / this.#total) * 4)
      : 4;
    if ((quarter >= this.#nextQuarter && quarter < 4) || now - this.#lastDraw >= PLAIN_LINE_MS) {
      this.#nextQuarter = quarter + 1;
      this.#draw(sent, now, true);
    }
  }

  /** Draws the final line: the whole body was sent. */
  finish(sent: number): void {
    if (this.#done) return;
    this.#draw(sent, this.#now(), true, true);
    this.#done = true;
  }

  /** Ends the display without a final line (the upload stopped early). */
  stop(): void {
    if (this.#done) return;
    if (this.#sink.terminal && this.#drawn) this.#sink.write("\n");
    this.#done = true;
  }

  #draw(sent: number, now: number, newline: boolean, finished = false): void {
    const line = formatProgress(sent, this.#total, now - this.#started, finished);
    if (this.#sink.terminal) this.#sink.write(`\r${line}\x1b[K${newline ? "\n" : ""}`);
    else this.#sink.write(`${line}\n`);
    this.#lastDraw = now;
    this.#drawn = !newline;
  }
}

/** Hints for error answers, by status. */
function hintFor(status: number, options: LoadOptions): string | undefined {
  const schema = options.schema ?? "public";
  switch (status) {
    case 400:
      return "the service could not read the request; check the file's format and the names";
    case 401:
      return "the token is missing, malformed or expired; pass --token or set " +
        "TABLE_SERVICE_TOKEN (deno task token mints one)";
    case 403:
      return `the token needs the tables:write scope and access to schema "${schema}"`;
    case 404:
      return `schema "${schema}" may not exist; check --schema and --url`;
    case 409:
      return options.ifExists === "fail"
        ? `table "${options.table}" already exists; pass --if-exists replace to replace it ` +
          "or --if-exists append to add the rows"
        : undefined;
    case 413:
      return "the file is larger than the service accepts (its MAX_UPLOAD_BYTES), " +
        "or the spreadsheet expands past its limits";
    case 415:
      return "the file's contents do not match its extension, or the format is not supported";
    case 422:
      return "the data does not fit the table's definition";
    default:
      return status >= 500
        ? "the service failed; its log has the request id quoted above"
        : undefined;
  }
}

/**
 * The lines to print for a failed answer: `error <status>: <message>`, up to five of its
 * details, and a hint for the status. For an answer that is not the service's JSON, the
 * start of its text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failureLines, parseLoadArgs } from "./load_cli.ts";
 *
 * const options = parseLoadArgs(["p.csv", "--table", "people"], {});
 * const body = '{"error":{"code":409,"type":"conflict","message":"Table exists"}}';
 * const lines = failureLines(409, "application/json", body, options);
 * assert.equal(lines[0], "error 409: Table exists");
 * assert.match(lines[1]!, /--if-exists replace/);
 * ```
 */
export function failureLines(
  status: number,
  contentType: string,
  text: string,
  options: LoadOptions,
): string[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    const start = text.trim().slice(0, 200).replaceAll(/\s+/g, " ");
    return [
      `error ${status}: the answer from ${options.url} is not JSON ` +
      `(${contentType || "no content type"})${start ? `: ${start}` : ""}`,
      "hint: is --url the table service?",
    ];
  }
  const error = (body as { error?: unknown } | null)?.error as
    | { message?: unknown; details?: unknown }
    | undefined;
  if (typeof error !== "object" || error === null) {
    return [`error ${status}: unexpected answer: ${text.slice(0, 200)}`];
  }
  const lines = [`error ${status}: ${String(error.message ?? "no message")}`];
  const details = Array.isArray(error.details) ? error.details : [];
  for (const detail of details.slice(0, 5)) lines.push(`  ${formatDetail(detail)}`);
  if (details.length > 5) lines.push(`  … and ${details.length - 5} more`);
  const hint = hintFor(status, options);
  if (hint !== undefined) lines.push(`hint: ${hint}`);
  return lines;
}

/** One error detail (`{row, column, message, …}`) as `row 17, column "price": message`. */
function formatDetail(detail: unknown): string {
  if (typeof detail !== "object" || detail === null) return String(detail);
  const { message, ...where } = detail as Record<string, unknown>;
  const place = Object.entries(where)
    .map(([key, value]) => `${key.replaceAll("_", " ")} ${JSON.stringify(value)}`)
    .join(", ");
  const text = typeof message === "string" ? message : JSON.stringify(message ?? null);
  return place ? `${place}: ${text}` : text;
}

/** An answer from the service. */
interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

/**
 * POSTs `body` with the headers (chunked when they give no `Content-Length`), calling
 * `onSent` with each chunk's size as the request takes it and `onEnd` after the last. An answer that comes before the body is sent (a 401, a 413) stops the
 * upload and is returned. With `idleSeconds` above 0, gives up with a {@link LoadError} once
 * nothing has been sent or received for that long.
 */
function post(
  url: string,
  headers: Record<string, string>,
  body: ReadableStream<Uint8Array>,
  onSent: (bytes: number) => void,
  onEnd: () => void,
  idleSeconds: number,
): Promise<Answer> {
  const { promise, resolve, reject } = Promise.withResolvers<Answer>();
  const reader = body.getReader();
  let answered = false;
  const send = url.startsWith("https:") ? https.request : http.request;
  let lastActive = performance.now();
  let sentAll = false;
  const idleMs = idleSeconds * 1000;
  const request = send(url, { method: "POST", headers }, (response) => {
    lastActive = performance.now();
    const chunks: Uint8Array[] = [];
    response.on("data", (chunk: Uint8Array) => {
      lastActive = performance.now();
      chunks.push(chunk);
    });
    response.on("error", reject);
    response.on("end", () => {
      answered = true;
      const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const chunk of chunks) bytes.set(chunk, (at += chunk.length) - chunk.length);
      resolve({
        status: response.statusCode ?? 0,
        contentType: String(response.headers["content-type"] ?? ""),
        text: new TextDecoder().decode(bytes),
      });
      reader.cancel().catch(() => {});
      request.destroy();
    });
  });
  request.on("error", (error) => {
    if (!answered) reject(error);
  });

  // A check every second at most, or twice per timeout when shorter (but not more often than
  // every 10 ms): a chunk sent costs a clock read, not a new timer.
  const watchdog = idleMs > 0
    ? setInterval(() => {
      if (performance.now() - lastActive < idleMs) return;
      const error = new LoadError(
        `Gave up: nothing sent to or received from ${url} for ${idleSeconds} s` +
          (sentAll ? ", after the whole file was sent" : ""),
        (sentAll
          ? "the service may still load it: look at the table before sending it again; "
          : "the service may be stuck; ") +
          "pass a longer --timeout, or 0 to wait as long as it takes",
      );
      reject(error);
      request.destroy(error);
    }, Math.max(10, Math.min(idleMs / 2, 1_000)))
    : undefined;
  promise.finally(() => clearInterval(watchdog)).catch(() => {});

  const drained = () =>
    new Promise<void>((done) => {
      const finish = () => {
        request.off("drain", finish);
        request.off("close", finish);
        done();
      };
      request.on("drain", finish);
      request.on("close", finish);
    });
  (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (answered || request.destroyed) return;
      if (done) {
        request.end();
        sentAll = true;
        onEnd();
        return;
      }
      if (!request.write(value)) await drained();
      lastActive = performance.now();
      onSent(value.length);
    }
  })().catch((error) => {
    request.destroy(error);
    reject(error);
  });
  return promise;
}

/** Reads up to `bytes` bytes from the start of `file`; the caller seeks where it needs. */
async function readStart(
  file: { read(p: Uint8Array): Promise<number | null> },
  bytes: number,
): Promise<Uint8Array> {
  const buffer = new Uint8Array(bytes);
  let filled = 0;
  while (filled < bytes) {
    const n = await file.read(buffer.subarray(filled));
    if (n === null) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

/** The `--definition` file as JSON text of the definition itself. */
async function readDefinition(path: string): Promise<string> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new LoadError(`Cannot read --definition "${path}": ${describeFileError(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new LoadError(
      `--definition "${path}" is not JSON: ${error instanceof Error ? error.message : error}`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new LoadError(
      `--definition "${path}" must hold a JSON object: {"table": definition} or a definition`,
    );
  }
  return JSON.stringify("table" in value ? value.table : value);
}

function describeFileError(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  return error instanceof Error ? error.message : String(error);
}

/**
 * The request body for `options.file`, with its content type and its length (undefined for
 * standard input, whose length is known only at its end).
 */
async function prepareBody(
  options: LoadOptions,
): Promise<
  { contentType: string; length: number | undefined; body: ReadableStream<Uint8Array> }
> {
  const definition = options.definition === undefined
    ? undefined
    : await readDefinition(options.definition);
  if (options.file === STDIN) return stdinBody(options, definition);
  let file: Deno.FsFile;
  let size: number;
  try {
    const info = await Deno.stat(options.file);
    if (info.isDirectory) throw new Deno.errors.IsADirectory();
    size = info.size;
    file = await Deno.open(options.file);
  } catch (error) {
    throw new LoadError(`Cannot read "${options.file}": ${describeFileError(error)}`);
  }
  try {
    let framing: Framing;
    if (options.kind === "json") {
      framing = jsonFraming(await readStart(file, 64 * 1024), definition);
      await file.seek(framing.skip, Deno.SeekMode.Start);
    } else framing = partFraming(options, basename(options.file), definition);
    const fileBytes = size - framing.skip;
    return {
      contentType: framing.contentType,
      length: framing.head.length + fileBytes + framing.tail.length,
      body: bodyStream(file, fileBytes, framing),
    };
  } catch (error) {
    file.close();
    throw error;
  }
}

/** Standard input as a body: its first bytes read ahead to frame JSON, then the rest. */
async function stdinBody(
  options: LoadOptions,
  definition: string | undefined,
): Promise<{ contentType: string; length: undefined; body: ReadableStream<Uint8Array> }> {
  let framing: Framing;
  let leading: Uint8Array = new Uint8Array(0);
  if (options.kind === "json") {
    leading = await readStart(Deno.stdin, 64 * 1024);
    framing = jsonFraming(leading, definition);
  } else framing = partFraming(options, `stdin${options.extension}`, definition);
  const rest = Deno.stdin.readable;
  async function* input(): AsyncGenerator<Uint8Array> {
    if (leading.length > framing.skip) yield leading.subarray(framing.skip);
    yield* rest;
  }
  return {
    contentType: framing.contentType,
    length: undefined,
    body: bodyStream({ readable: ReadableStream.from(input()) }, undefined, framing),
  };
}

/** The multipart framing of a file for `upload/csv` or `upload/excel`. */
function partFraming(options: LoadOptions, filename: string, definition?: string): Framing {
  const boundary = `----table-service-load-${crypto.randomUUID()}`;
  const type = EXTENSIONS[options.extension]!.type;
  const body = definition === undefined ? undefined : `{"table":${definition}}`;
  return multipartFraming(boundary, filename, type, body);
}

/** Network failures in words. */
function unreachable(error: unknown, options: LoadOptions): LoadError {
  if (error instanceof LoadError) return error;
  const code = (error as { code?: unknown })?.code;
  const reason = code === "ECONNREFUSED"
    ? "connection refused"
    : code === "ENOTFOUND" || code === "EAI_AGAIN"
    ? "host not found"
    : code === "ECONNRESET" || code === "EPIPE"
    ? "the connection was closed before an answer came"
    : error instanceof Error
    ? error.message
    : String(error);
  return new LoadError(
    `Cannot reach the service at ${options.url}: ${reason}`,
    "is the service running there? pass --url or set TABLE_SERVICE_URL",
  );
}

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

function nonEmpty(text: string | undefined): string | undefined {
  return text === undefined || text.trim() === "" ? undefined : text.trim();
}

/** An http(s) base URL without a trailing slash (nor a trailing `/api/v1`), if valid. */
function parseBaseUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  const path = url.pathname.replace(/\/+$/, "").replace(/\/api\/v1$/, "");
  return `${url.origin}${path}`;
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
