/**
 * The service's error answers in words, with a hint at what to change.
 *
 * @module
 */

import type { LoadOptions } from "./args.ts";

/** Hints for error answers, by status (and for a 404, by what the message says is missing). */
function hintFor(status: number, options: LoadOptions, message: string): string | undefined {
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
      if (/\bsheet\b/i.test(message)) return "check --sheet: a sheet's name or 0-based index";
      if (/\btemplate\b/i.test(message)) return "check the template's name and version";
      return /^Table\b/.test(message)
        ? undefined
        : `schema "${schema}" may not exist; check --schema and --url`;
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
 * import { failureLines } from "./answer.ts";
 * import { parseLoadArgs } from "./args.ts";
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
  const message = String(error.message ?? "no message");
  const lines = [`error ${status}: ${message}`];
  const details = Array.isArray(error.details) ? error.details : [];
  for (const detail of details.slice(0, 5)) lines.push(`  ${formatDetail(detail)}`);
  if (details.length > 5) lines.push(`  … and ${details.length - 5} more`);
  const hint = hintFor(status, options, message);
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
