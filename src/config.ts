/**
 * Service configuration, parsed once from a plain record of environment variables by a `zod`
 * schema.
 *
 * @module
 */

import { z } from "zod";
import { DUCKDB_READER_BYTES } from "./limits.ts";
import { isLoopback, type PgwireConfig, pgwireConfig } from "./config_pgwire.ts";

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
  /**
   * A PostgreSQL database (`DATABASE_URL`, `postgres://` or `postgresql://`) to keep the
   * tables in instead of the DuckDB file; absent for DuckDB.
   */
  readonly databaseUrl?: string;
  /** Most connections to {@link Config.databaseUrl} one instance holds at once. */
  readonly databasePoolSize: number;
  /** The only directory DuckDB may read files from: request bodies are spooled here. */
  readonly spoolDir: string;
  readonly auth: AuthConfig;
  readonly logLevel: LogLevel;
  readonly maxUploadBytes: number;
  readonly maxJsonBytes: number;
  /**
   * DuckDB's memory limit in bytes; past it, DuckDB spills to `DATA_DIR/tmp`. Absent, half of
   * the memory the process may use, as DuckDB reads it (the machine's, or a container's limit).
   */
  readonly duckdbMemoryBytes?: number;
  /** DuckDB's block size for a database file it creates; an existing file keeps its own. */
  readonly duckdbBlockBytes: number;
  /** Threads DuckDB runs a statement on; absent, DuckDB's default: one per CPU core. */
  readonly duckdbThreads?: number;
  /** Most rows of an uploaded sheet, the header included. */
  readonly maxSheetRows: number;
  /** Most bytes an uploaded spreadsheet may decompress to (also at most 100× its size). */
  readonly maxSheetBytes: number;
  /** Who may read `GET /metrics`: anyone, or holders of a valid token. */
  readonly metricsAccess: MetricsAccess;
  /** Longest wait for the next bytes of a streamed request body before answering 408. */
  readonly bodyIdleMs: number;
  /** Longest a client's query runs before it is interrupted and answered 408. */
  readonly queryTimeoutMs: number;
  /** Queries (`POST /query`, streamed answers until they end) one token may have under way. */
  readonly readsPerToken: number;
  /** How often freed native memory is handed back to the system; 0: never. */
  readonly memoryTrimMs: number;
  /** Origins whose pages may call the API (CORS): none, some, or `["*"]` for any. */
  readonly corsOrigins: readonly string[];
  /** How often a backup is taken on schedule; absent, never. */
  readonly backupIntervalMs?: number;
  /** How many of the scheduled backups are kept; older ones are removed. */
  readonly backupKeep: number;
  /** The PostgreSQL protocol listener (docs/pgwire.md); absent when it is off. */
  readonly pgwire?: PgwireConfig;
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

/** The block sizes DuckDB accepts for a new database file; 256 KiB is its default. */
const BLOCK_SIZES: readonly number[] = [16, 32, 64, 128, 256].map((k) => k * 1024);

/** Shortest time between scheduled backups: a backup may well take seconds. */
const MIN_BACKUP_INTERVAL_SECONDS = 60;

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

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/**
 * Seconds in a duration such as `90s`, `15m`, `6h`, `7d` or a number of seconds; undefined
 * when it is not one, or is zero.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseDuration } from "./config.ts";
 *
 * assert.equal(parseDuration("6h"), 21600);
 * assert.equal(parseDuration("45"), 45);
 * assert.equal(parseDuration("soon"), undefined);
 * ```
 */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)([smhd]?)$/.exec(text.trim());
  if (!match) return undefined;
  const seconds = Number(match[1]) * DURATION_UNITS[match[2] || "s"]!;
  return seconds > 0 ? seconds : undefined;
}

/**
 * Records a problem with the variable being parsed. Its message follows the variable's name in
 * the {@link ConfigError} (`PORT "http" is not a port number`), so it starts with the value.
 */
function problem(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: "custom", message });
  return z.NEVER;
}

/** A variable as given, trimmed; blank is unset. */
const given = z.string().optional().transform((raw) => raw?.trim() || undefined);

/** A whole number from `min` to `max`, `fallback` when unset. */
function wholeNumber<F extends number | undefined>(
  min: number,
  max: number,
  what: string,
  fallback: F,
) {
  return given.transform((raw, ctx): number | F => {
    if (raw === undefined) return fallback;
    const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
    return n >= min && n <= max ? n : problem(ctx, `"${raw}" is not ${what} (${min}-${max})`);
  });
}

/** Seconds from `min` to `max`, given in milliseconds. */
function seconds(min: number, max: number, fallback: number) {
  return wholeNumber(min, max, "a whole number of seconds", fallback).transform((s) => s * 1000);
}

/** One of `allowed`, in any case. */
function choice<const T extends string>(allowed: readonly T[], fallback: T) {
  return given.transform((raw, ctx): T => {
    const chosen = (raw ?? fallback).toLowerCase();
    if ((allowed as readonly string[]).includes(chosen)) return chosen as T;
    return problem(ctx, `"${raw}" is not one of ${allowed.join(", ")}`);
  });
}

/**
 * A size in bytes (`1048576`, `10MiB`; also a count, which is a size without units), at least 1.
 * `check` says what else is wrong with a size, after its value.
 */
function size<F extends number | undefined>(
  fallback: F,
  check?: (bytes: number) => string | undefined,
) {
  return given.transform((raw, ctx): number | F => {
    if (raw === undefined) return fallback;
    const bytes = parseSize(raw);
    if (bytes === undefined || bytes < 1) {
      return problem(ctx, `"${raw}" is not a size in bytes (such as 1048576 or 10MiB)`);
    }
    const complaint = check?.(bytes);
    return complaint === undefined ? bytes : problem(ctx, `"${raw}" ${complaint}`);
  });
}

/**
 * The variables, one schema each. Every variable is parsed even when another is bad, so that
 * the error names them all at once.
 */
const variables = z.object({
  HOST: given.transform((host = "127.0.0.1", ctx) =>
    /^[A-Za-z0-9.:\[\]-]+$/.test(host) ? host : problem(ctx, `"${host}" is not a host name`)
  ),
  PORT: wholeNumber(0, 65535, "a port number", 8080),
  DATA_DIR: given.transform((dir = "./data") => dir.replace(/\/+$/, "") || "/"),
  DATABASE_URL: given.transform((url, ctx) =>
    url === undefined || /^postgres(ql)?:\/\/[^\s]+$/.test(url)
      ? url
      : problem(ctx, "is not a postgres:// or postgresql:// URL")
  ),
  DATABASE_POOL_SIZE: wholeNumber(1, 1000, "a number of connections", 10),
  AUTH_JWT_SECRET: given.transform((secret, ctx) =>
    secret !== undefined && secret.length < MIN_SECRET_LENGTH
      ? problem(ctx, `is shorter than ${MIN_SECRET_LENGTH} characters`)
      : secret
  ),
  AUTH_JWT_PUBLIC_KEY: given,
  AUTH_JWKS_FILE: given,
  AUTH_ISSUER: given,
  AUTH_AUDIENCE: given,
  LOG_LEVEL: choice(LOG_LEVELS, "info"),
  MAX_UPLOAD_BYTES: size(1024 ** 3),
  MAX_JSON_BYTES: size(10 * 1024 ** 2),
  DUCKDB_MEMORY_LIMIT: size(
    undefined,
    (bytes) =>
      bytes < DUCKDB_READER_BYTES
        ? `is below ${DUCKDB_READER_BYTES / 1024 ** 2}MiB, the least a load needs`
        : undefined,
  ),
  // Smaller blocks let a commit to a wide table hold a block per column within the memory
  // limit, but DuckDB stores most numbers uncompressed in them: it stays an opt-in.
  DUCKDB_BLOCK_SIZE: size(
    256 * 1024,
    (bytes) =>
      BLOCK_SIZES.includes(bytes)
        ? undefined
        : "is not one of DuckDB's block sizes (16KiB, 32KiB, 64KiB, 128KiB or 256KiB)",
  ),
  DUCKDB_THREADS: wholeNumber(1, 1024, "a number of threads", undefined),
  MAX_SHEET_ROWS: size(1_048_576),
  MAX_SHEET_BYTES: size(2 * 1024 ** 3),
  METRICS_ACCESS: choice(METRICS_ACCESS, "token"),
  BODY_IDLE_SECONDS: seconds(1, 3600, 30),
  QUERY_TIMEOUT_SECONDS: seconds(1, 3600, 30),
  QUERY_CONCURRENCY_PER_TOKEN: wholeNumber(1, 1000, "a number of requests", 4),
  MEMORY_TRIM_SECONDS: seconds(0, 3600, 10),
  CORS_ORIGINS: given.transform(parseOrigins),
  BACKUP_INTERVAL: given.transform((raw, ctx) => {
    if (raw === undefined) return undefined;
    const seconds = parseDuration(raw);
    return seconds !== undefined && seconds >= MIN_BACKUP_INTERVAL_SECONDS
      ? seconds * 1000
      : problem(ctx, `"${raw}" is not a duration of a minute or more (such as 30m, 6h or 1d)`);
  }),
  BACKUP_KEEP: wholeNumber(1, 10_000, "a number of backups", 7),
  PGWIRE_PORT: given.transform((raw, ctx): number | "off" | undefined => {
    if (raw === undefined) return undefined;
    if (raw.toLowerCase() === "off") return "off";
    const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
    return n >= 0 && n <= 65535
      ? n
      : problem(ctx, `"${raw}" is not a port number (0-65535) or off`);
  }),
  PGWIRE_TLS_CERT: given,
  PGWIRE_TLS_KEY: given,
  PGWIRE_MAX_CONNECTIONS: wholeNumber(1, 10_000, "a number of connections", 100),
  PGWIRE_IDLE_TIMEOUT_SECONDS: seconds(1, 7 * 86_400, 3600),
  PGWIRE_MAX_MESSAGE_BYTES: size(16 * 1024 ** 2),
});

/** Every variable the service reads; each may also be given as a flag (`--data-dir`). */
export const VARIABLES: readonly string[] = Object.keys(variables.shape);

const configSchema = variables
  .superRefine((vars, ctx) => {
    const keys = [
      vars.AUTH_JWT_SECRET && "AUTH_JWT_SECRET",
      vars.AUTH_JWT_PUBLIC_KEY && "AUTH_JWT_PUBLIC_KEY",
      vars.AUTH_JWKS_FILE && "AUTH_JWKS_FILE",
    ].filter(Boolean);
    if (keys.length > 1) {
      ctx.addIssue({ code: "custom", message: `set only one of ${keys.join(", ")}` });
    }
    if ((vars.PGWIRE_TLS_CERT === undefined) !== (vars.PGWIRE_TLS_KEY === undefined)) {
      ctx.addIssue({
        code: "custom",
        message: "set both PGWIRE_TLS_CERT and PGWIRE_TLS_KEY, or neither",
      });
    } else if (
      typeof vars.PGWIRE_PORT === "number" && !isLoopback(vars.HOST) &&
      vars.PGWIRE_TLS_CERT === undefined
    ) {
      ctx.addIssue({
        code: "custom",
        message: `PGWIRE_PORT on HOST "${vars.HOST}", not a loopback address, needs TLS: ` +
          "set PGWIRE_TLS_CERT and PGWIRE_TLS_KEY, or PGWIRE_PORT=off",
      });
    }
    if (vars.BACKUP_INTERVAL !== undefined && vars.DATABASE_URL !== undefined) {
      ctx.addIssue({
        code: "custom",
        message: "BACKUP_INTERVAL is for the DuckDB file; back up PostgreSQL with pg_dump",
      });
    }
  }, { when: () => true })
  .transform((vars): Config => {
    const key: AuthKeySource = vars.AUTH_JWT_SECRET !== undefined
      ? { kind: "hmac", secret: vars.AUTH_JWT_SECRET }
      : vars.AUTH_JWT_PUBLIC_KEY !== undefined
      ? { kind: "pem", value: vars.AUTH_JWT_PUBLIC_KEY }
      : vars.AUTH_JWKS_FILE !== undefined
      ? { kind: "jwks", path: vars.AUTH_JWKS_FILE }
      : { kind: "generated", secretPath: `${vars.DATA_DIR}/jwt-secret` };
    return Object.freeze({
      host: vars.HOST,
      port: vars.PORT,
      dataDir: vars.DATA_DIR,
      databasePath: `${vars.DATA_DIR}/tables.duckdb`,
      ...(vars.DATABASE_URL === undefined ? {} : { databaseUrl: vars.DATABASE_URL }),
      databasePoolSize: vars.DATABASE_POOL_SIZE,
      spoolDir: `${vars.DATA_DIR}/spool`,
      auth: Object.freeze({ key, issuer: vars.AUTH_ISSUER, audience: vars.AUTH_AUDIENCE }),
      logLevel: vars.LOG_LEVEL,
      maxUploadBytes: vars.MAX_UPLOAD_BYTES,
      maxJsonBytes: vars.MAX_JSON_BYTES,
      ...(vars.DUCKDB_MEMORY_LIMIT === undefined
        ? {}
        : { duckdbMemoryBytes: vars.DUCKDB_MEMORY_LIMIT }),
      duckdbBlockBytes: vars.DUCKDB_BLOCK_SIZE,
      ...(vars.DUCKDB_THREADS === undefined ? {} : { duckdbThreads: vars.DUCKDB_THREADS }),
      maxSheetRows: vars.MAX_SHEET_ROWS,
      maxSheetBytes: vars.MAX_SHEET_BYTES,
      metricsAccess: vars.METRICS_ACCESS,
      bodyIdleMs: vars.BODY_IDLE_SECONDS,
      queryTimeoutMs: vars.QUERY_TIMEOUT_SECONDS,
      readsPerToken: vars.QUERY_CONCURRENCY_PER_TOKEN,
      memoryTrimMs: vars.MEMORY_TRIM_SECONDS,
      corsOrigins: vars.CORS_ORIGINS,
      ...(vars.BACKUP_INTERVAL === undefined ? {} : { backupIntervalMs: vars.BACKUP_INTERVAL }),
      backupKeep: vars.BACKUP_KEEP,
      ...pgwireConfig(vars),
    });
  });

/**
 * Parses the service configuration from environment variables (flags merged in by
 * {@link flagsToEnv}), reporting every bad variable at once.
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
  const parsed = configSchema.safeParse(env);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    parsed.error.issues.map((issue) =>
      issue.path.length > 0 ? `${issue.path.join(".")} ${issue.message}` : issue.message
    ),
  );
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
 * Takes `--restore FILE` (or `--restore=FILE`) out of the command line: a flag with no
 * variable, since a restore must happen at one start, not at every restart.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { restoreFlag } from "./config.ts";
 *
 * assert.deepEqual(restoreFlag(["--port", "1", "--restore", "b.duckdb"]), {
 *   restore: "b.duckdb",
 *   rest: ["--port", "1"],
 * });
 * assert.deepEqual(restoreFlag([]), { restore: undefined, rest: [] });
 * ```
 */
export function restoreFlag(
  args: readonly string[],
): { restore: string | undefined; rest: string[] } {
  const rest: string[] = [];
  let restore: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg !== "--restore" && !arg.startsWith("--restore=")) {
      rest.push(arg);
      continue;
    }
    if (restore !== undefined) throw new ConfigError(["--restore is given twice"]);
    restore = arg === "--restore" ? args[++i] : arg.slice("--restore=".length);
    if (!restore) throw new ConfigError(["flag --restore needs a file"]);
  }
  return { restore, rest };
}

/**
 * `CORS_ORIGINS`: `*`, or origins separated by commas, each as a browser sends it in `Origin`
 * (`https://app.example`, `http://localhost:5173`; case and a default port are normalized).
 */
function parseOrigins(text: string | undefined, ctx: z.RefinementCtx): readonly string[] {
  if (text === undefined) return [];
  if (text === "*") return ["*"];
  const entries = text.split(",").map((entry) => entry.trim());
  if (entries.includes("")) return problem(ctx, `"${text}" has an empty entry`);
  if (entries.includes("*")) return problem(ctx, `"${text}" mixes * with origins; give * alone`);
  const origins: string[] = [];
  for (const entry of entries) {
    const origin = parseOrigin(entry);
    if (origin === undefined) {
      ctx.addIssue({
        code: "custom",
        message: `"${entry}" is not an origin (scheme://host[:port], such as https://app.example)`,
      });
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

function parseSize(text: string): number | undefined {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text);
  if (!match) return undefined;
  const unit = SIZE_UNITS[match[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const n = Number(match[1]) * unit;
  return Number.isSafeInteger(n) ? n : undefined;
}
