/**
 * Service configuration, parsed once from a plain record of environment variables.
 *
 * @module
 */

import { DUCKDB_READER_BYTES } from "./limits.ts";

/** Log levels in increasing order of severity. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = typeof LOG_LEVELS[number];

/** Where the keys that verify bearer tokens come from. */
export type AuthKeySource =
  | { readonly kind: "hmac"; readonly secret: string }
  | { readonly kind: "pem"; readonly value: string }
  | { readonly kind: "jwks"; readonly path: string }
  | { readonly kind: "generated"; readonly secretPath: string };

/** Token verification settings. */
export interface AuthConfig {
  readonly key: AuthKeySource;
  readonly issuer?: string;
  readonly audience?: string;
}

/** Everything the service needs to start, validated. */
export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** The DuckDB file, `tables.duckdb` inside {@link Config.dataDir}. */
  readonly databasePath: string;
  /** The only directory DuckDB may read files from: request bodies are spooled here. */
  readonly spoolDir: string;
  readonly auth: AuthConfig;
  readonly logLevel: LogLevel;
  readonly maxUploadBytes: number;
  readonly maxJsonBytes: number;
  /** DuckDB's memory limit in bytes; past it, DuckDB spills to `DATA_DIR/tmp`. */
  readonly duckdbMemoryBytes: number;
  /** DuckDB's block size for a database file it creates; an existing file keeps its own. */
  readonly duckdbBlockBytes: number;
  /** Most rows of an uploaded sheet, the header included. */
  readonly maxSheetRows: number;
  /** Most bytes an uploaded spreadsheet may decompress to (also at most 100× its size). */
  readonly maxSheetBytes: number;
  /** Who may read `GET /metrics`: anyone, or holders of a valid token. */
  readonly metricsAccess: MetricsAccess;
  /** Longest wait for the next bytes of a streamed request body before answering 408. */
  readonly bodyIdleMs: number;
  /** How often freed native memory is handed back to the system; 0: never. */
  readonly memoryTrimMs: number;
  /** Origins whose pages may call the API (CORS): none, some, or `["*"]` for any. */
  readonly corsOrigins: readonly string[];
}

/** A configuration that cannot be used; the message names every bad variable on one line. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

/** The choices of `METRICS_ACCESS`. */
export const METRICS_ACCESS = ["token", "public"] as const;
/** One of {@link METRICS_ACCESS}. */
export type MetricsAccess = typeof METRICS_ACCESS[number];

/** Every variable the service reads; each may also be given as a flag (`--data-dir`). */
export const VARIABLES: readonly string[] = [
  "HOST",
  "PORT",
  "DATA_DIR",
  "AUTH_JWT_SECRET",
  "AUTH_JWT_PUBLIC_KEY",
  "AUTH_JWKS_FILE",
  "AUTH_ISSUER",
  "AUTH_AUDIENCE",
  "LOG_LEVEL",
  "MAX_UPLOAD_BYTES",
  "MAX_JSON_BYTES",
  "DUCKDB_MEMORY_LIMIT",
  "DUCKDB_BLOCK_SIZE",
  "MAX_SHEET_ROWS",
  "MAX_SHEET_BYTES",
  "METRICS_ACCESS",
  "BODY_IDLE_SECONDS",
  "MEMORY_TRIM_SECONDS",
  "CORS_ORIGINS",
];

/** The block sizes DuckDB accepts for a new database file; 256 KiB is its default. */
const BLOCK_SIZES: readonly number[] = [16, 32, 64, 128, 256].map((k) => k * 1024);

/** Shortest HMAC secret accepted: HS256 needs at least 256 bits to be worth its name. */
const MIN_SECRET_LENGTH = 32;

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

/**
 * Parses the service configuration from environment variables, reporting every bad
 * variable at once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseConfig } from "./config.ts";
 *
 * const config = parseConfig({ PORT: "9000", MAX_JSON_BYTES: "2MiB" });
 * assert.equal(config.port, 9000);
 * assert.equal(config.maxJsonBytes, 2 * 1024 * 1024);
 * assert.equal(config.auth.key.kind, "generated");
 * ```
 */
export function parseConfig(env: Readonly<Record<string, string | undefined>>): Config {
  const problems: string[] = [];
  const value = (name: string): string | undefined => {
    const raw = env[name];
    return raw === undefined || raw.trim() === "" ? undefined : raw.trim();
  };

  const host = value("HOST") ?? "127.0.0.1";
  if (!/^[A-Za-z0-9.:\[\]-]+$/.test(host)) problems.push(`HOST "${host}" is not a host name`);

  const port = parseInteger(value("PORT") ?? "8080", 0, 65535);
  if (port === undefined) {
    problems.push(`PORT "${value("PORT")}" is not a port number (0-65535)`);
  }

  const dataDir = (value("DATA_DIR") ?? "./data").replace(/\/+$/, "") || "/";

  const choice = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const chosen = (value(name) ?? fallback).toLowerCase();
    if ((allowed as readonly string[]).includes(chosen)) return chosen as T;
    problems.push(`${name} "${value(name)}" is not one of ${allowed.join(", ")}`);
    return fallback;
  };
  const logLevel = choice("LOG_LEVEL", LOG_LEVELS, "info");
  const metricsAccess = choice("METRICS_ACCESS", METRICS_ACCESS, "token");

  const size = (name: string, fallback: number): number => {
    const raw = value(name);
    if (raw === undefined) return fallback;
    const parsed = parseSize(raw);
    if (parsed === undefined || parsed < 1) {
      problems.push(`${name} "${raw}" is not a size in bytes (such as 1048576 or 10MiB)`);
      return fallback;
    }
    return parsed;
  };
  const maxUploadBytes = size("MAX_UPLOAD_BYTES", 1024 ** 3);
  const maxJsonBytes = size("MAX_JSON_BYTES", 10 * 1024 ** 2);
  const duckdbMemoryBytes = size("DUCKDB_MEMORY_LIMIT", 256 * 1024 ** 2);
  if (duckdbMemoryBytes < DUCKDB_READER_BYTES) {
    problems.push(
      `DUCKDB_MEMORY_LIMIT "${value("DUCKDB_MEMORY_LIMIT")}" is below ${
        DUCKDB_READER_BYTES / 1024 ** 2
      }MiB, the least a load needs`,
    );
  }
  // Smaller blocks let a commit to a wide table hold a block per column within the memory
  // limit, but DuckDB stores most numbers uncompressed in them: it stays an opt-in.
  const duckdbBlockBytes = size("DUCKDB_BLOCK_SIZE", 256 * 1024);
  if (!BLOCK_SIZES.includes(duckdbBlockBytes)) {
    problems.push(
      `DUCKDB_BLOCK_SIZE "${value("DUCKDB_BLOCK_SIZE")}" is not one of DuckDB's block sizes ` +
        "(16KiB, 32KiB, 64KiB, 128KiB or 256KiB)",
    );
  }
  // A count is a size without units; the same parser keeps one error message.
  const maxSheetRows = size("MAX_SHEET_ROWS", 1_048_576);
  const maxSheetBytes = size("MAX_SHEET_BYTES", 2 * 1024 ** 3);
  const bodyIdleSeconds = parseInteger(value("BODY_IDLE_SECONDS") ?? "30", 1, 3600);
  if (bodyIdleSeconds === undefined) {
    problems.push(
      `BODY_IDLE_SECONDS "${value("BODY_IDLE_SECONDS")}" is not a whole number of seconds (1-3600)`,
    );
  }
  const memoryTrimSeconds = parseInteger(value("MEMORY_TRIM_SECONDS") ?? "10", 0, 3600);
  if (memoryTrimSeconds === undefined) {
    problems.push(
      `MEMORY_TRIM_SECONDS "${
        value("MEMORY_TRIM_SECONDS")
      }" is not a whole number of seconds (0-3600)`,
    );
  }

  const corsOrigins = parseOrigins(value("CORS_ORIGINS"), problems);

  const secret = value("AUTH_JWT_SECRET");
  const publicKey = value("AUTH_JWT_PUBLIC_KEY");
  const jwksFile = value("AUTH_JWKS_FILE");
  const given = [
    secret && "AUTH_JWT_SECRET",
    publicKey && "AUTH_JWT_PUBLIC_KEY",
    jwksFile && "AUTH_JWKS_FILE",
  ].filter(Boolean);
  if (given.length > 1) problems.push(`set only one of ${given.join(", ")}`);
  if (secret !== undefined && secret.length < MIN_SECRET_LENGTH) {
    problems.push(`AUTH_JWT_SECRET is shorter than ${MIN_SECRET_LENGTH} characters`);
  }
  const key: AuthKeySource = secret !== undefined
    ? { kind: "hmac", secret }
    : publicKey !== undefined
    ? { kind: "pem", value: publicKey }
    : jwksFile !== undefined
    ? { kind: "jwks", path: jwksFile }
    : { kind: "generated", secretPath: `${dataDir}/jwt-secret` };

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    host,
    port: port!,
    dataDir,
    databasePath: `${dataDir}/tables.duckdb`,
    spoolDir: `${dataDir}/spool`,
    auth: Object.freeze({
      key,
      issuer: value("AUTH_ISSUER"),
      audience: value("AUTH_AUDIENCE"),
    }),
    logLevel,
    maxUploadBytes,
    maxJsonBytes,
    duckdbMemoryBytes,
    duckdbBlockBytes,
    maxSheetRows,
    maxSheetBytes,
    metricsAccess,
    bodyIdleMs: bodyIdleSeconds! * 1000,
    memoryTrimMs: memoryTrimSeconds! * 1000,
    corsOrigins,
  });
}

/**
 * Turns command-line flags (`--port 9000`, `--data-dir=/srv/t`) into the environment
 * variables they mirror, so flags and variables go through one parser.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { flagsToEnv } from "./config.ts";
 *
 * assert.deepEqual(flagsToEnv(["--port", "9000", "--data-dir=/tmp/x"]), {
 *   PORT: "9000",
 *   DATA_DIR: "/tmp/x",
 * });
 * ```
 */
export function flagsToEnv(args: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const match = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(arg);
    if (!match) throw new ConfigError([`unexpected argument "${arg}"`]);
    const name = match[1]!.replaceAll("-", "_").toUpperCase();
    if (!VARIABLES.includes(name)) throw new ConfigError([`unknown flag ${arg}`]);
    const flagValue = match[2] ?? args[++i];
    if (flagValue === undefined) throw new ConfigError([`flag ${arg} needs a value`]);
    env[name] = flagValue;
  }
  return env;
}

/**
 * `CORS_ORIGINS`: `*`, or origins separated by commas, each as a browser sends it in `Origin`
 * (`https://app.example`, `http://localhost:5173`; case and a default port are normalized).
 */
function parseOrigins(text: string | undefined, problems: string[]): readonly string[] {
  if (text === undefined) return [];
  if (text === "*") return ["*"];
  const entries = text.split(",").map((entry) => entry.trim());
  if (entries.includes("")) {
    problems.push(`CORS_ORIGINS "${text}" has an empty entry`);
    return [];
  }
  if (entries.includes("*")) {
    problems.push(`CORS_ORIGINS "${text}" mixes * with origins; give * alone`);
    return [];
  }
  const origins: string[] = [];
  for (const entry of entries) {
    const origin = parseOrigin(entry);
    if (origin === undefined) {
      problems.push(
        `CORS_ORIGINS "${entry}" is not an origin (scheme://host[:port], such as https://app.example)`,
      );
    } else origins.push(origin);
  }
  return Object.freeze(origins);
}

function parseOrigin(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  // Nothing but scheme, host and port: no path, query, fragment or user.
  const bare = url.href === `${url.origin}/`;
  return /^https?:$/.test(url.protocol) && bare ? url.origin : undefined;
}

function parseInteger(text: string, min: number, max: number): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}

function parseSize(text: string): number | undefined {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text);
  if (!match) return undefined;
  const unit = SIZE_UNITS[match[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const n = Number(match[1]) * unit;
  return Number.isSafeInteger(n) ? n : undefined;
}
