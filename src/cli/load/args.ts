/**
 * The load command's line: its flags, help, and the checked options they give.
 *
 * @module
 */

import { extname, resolve } from "node:path";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { IF_EXISTS, type IfExists } from "../../catalog/uploads.ts";
import { ConfigError } from "../../config.ts";

/** The service's address when neither `--url` nor `TABLE_SERVICE_URL` is given. */
export const DEFAULT_URL = "http://127.0.0.1:8080";

/** The upload endpoint a file goes to. */
export type UploadKind = "json" | "csv" | "excel";

/** The one-line usage, printed with every command-line error. */
export const USAGE = "usage: deno task load -- FILE --table NAME [--schema S] " +
  "[--if-exists fail|replace|append] [--definition FILE.json] [--sheet NAME|INDEX] " +
  "[--format EXT] [--url URL] [--token T] [--timeout SECONDS] [--idempotency-key KEY]";

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
  "idempotency-key": { type: "string" },
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
      --idempotency-key KEY
                           sent as Idempotency-Key: run again with the same KEY after a
                           failure or timeout, a load the service committed is answered
                           again rather than loaded twice (1-255 visible ASCII characters)
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
export const EXTENSIONS: Record<string, { kind: UploadKind; type: string }> = {
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
  /** Sent as the `Idempotency-Key` header. */
  readonly idempotencyKey?: string;
}

/**
 * The endpoint a file goes to, by its extension (any letter case); undefined for an
 * extension the service does not take.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { uploadKind } from "./args.ts";
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
 * import { parseLoadArgs } from "./args.ts";
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

  // In any letter case, as the service takes if_exists.
  const ifExists = values["if-exists"].toLowerCase();
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

  const idempotencyKey = values["idempotency-key"];
  if (idempotencyKey !== undefined && !/^[\x21-\x7e]{1,255}$/.test(idempotencyKey)) {
    problems.push("--idempotency-key must be 1-255 visible ASCII characters");
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
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  };
}

/**
 * The request URL of an upload: the endpoint for the file's kind, with `schema` (when
 * given), `if_exists` and `sheet` (when given) in the query.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseLoadArgs, uploadUrl } from "./args.ts";
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
