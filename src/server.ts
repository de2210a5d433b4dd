/**
 * The running service: the directories, the listening socket, the store, the app and the
 * memory trim, put together from a {@link Config} and taken apart again in order. `main.ts`
 * runs one per process; tests run them in their own process.
 *
 * @module
 */

import { createApp } from "./http/app.ts";
import { UI_PATH } from "./http/ui/mod.ts";
import { createVerifier, mintToken, SCOPES } from "./auth/jwt.ts";
import { ensureSecret } from "./auth/secret.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import { startMemoryTrim } from "./memory_trim.ts";
import { checkBackupFile, openStore, settleFile } from "./store/duckdb/mod.ts";
import { Backups, restoreDatabase } from "./service/backups.ts";
import { openPostgresStore } from "./store/postgres/mod.ts";
import type { Store } from "./store/store.ts";
import { ApiError } from "./errors.ts";
import { type Pgwire, startPgwire } from "./pgwire/mod.ts";
import { Registry } from "prom-client";

/** Lifetime of the token printed when a development secret is created. */
const FIRST_TOKEN_TTL_SECONDS = 24 * 60 * 60;

/** A start-up failure worth one line and a non-zero exit, without a stack trace. */
export class StartupError extends Error {}

/** A service started by {@link startService}. */
export interface Service {
  /** Where it listens. */
  readonly addr: Deno.NetAddr;
  /** The PostgreSQL protocol's port, when it listens. */
  readonly pgwirePort?: number;
  /**
   * Stops accepting, lets requests in flight finish, then checkpoints and closes the
   * database; rejects with the store's error when the closing checkpoint failed. Calling it
   * again returns the same promise.
   */
  stop(): Promise<void>;
}

/** Options of {@link startService}. */
export interface StartOptions {
  /** Where the service's lines for its operator go (the listening address, a first token). */
  readonly print?: (line: string) => void;
  /**
   * A backup to restore before serving (`--restore`): checked, then put in place of the
   * database file, the current one kept beside it. DuckDB only.
   */
  readonly restore?: string;
}

/**
 * Prepares the data directory, binds the port, opens the store, clears the spool and serves
 * the app; prints the listening address, and a token with every scope when it created a
 * development secret. Fails with a {@link StartupError} naming what it could not do.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseConfig } from "./config.ts";
 * import { createLogger } from "./log.ts";
 * import { startService } from "./server.ts";
 *
 * const dir = await Deno.makeTempDir();
 * const config = parseConfig({ PORT: "0", DATA_DIR: dir, AUTH_JWT_SECRET: "s".repeat(32) });
 * const lines: string[] = [];
 * const service = await startService(config, createLogger("error"), {
 *   print: (line) => lines.push(line),
 * });
 * const answer = await fetch(`http://127.0.0.1:${service.addr.port}/healthz`);
 * assert.equal(answer.status, 200);
 * await answer.body?.cancel();
 * await service.stop();
 * assert.match(lines[0]!, /^Listening on http:\/\/127\.0\.0\.1:\d+\/$/);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function startService(
  config: Config,
  logger: Logger,
  { print = (line) => console.log(line), restore }: StartOptions = {},
): Promise<Service> {
  await ensureDirectory(config.dataDir, "DATA_DIR");
  await Deno.mkdir(config.spoolDir, { recursive: true });
  await Deno.mkdir(`${config.dataDir}/tmp`, { recursive: true });
  const spoolDir = await Deno.realPath(config.spoolDir);
  const duckdbOptions = {
    path: config.databasePath,
    spoolDir,
    // Made once the database is open (Backups.open): a refused start leaves nothing new behind.
    backupDir: `${await Deno.realPath(config.dataDir)}/backups`,
    tempDir: await Deno.realPath(`${config.dataDir}/tmp`),
    memoryBytes: config.duckdbMemoryBytes,
    blockBytes: config.duckdbBlockBytes,
    threads: config.duckdbThreads,
    readTimeoutMs: config.queryTimeoutMs,
    logger,
  };
  if (restore !== undefined && config.databaseUrl !== undefined) {
    throw new StartupError("--restore is for the DuckDB file; restore PostgreSQL with pg_restore");
  }

  let firstStart: { secretPath: string; token: string } | undefined;
  if (config.auth.key.kind === "generated") {
    const { secretPath } = config.auth.key;
    const { secret, created } = await ensureSecret(secretPath);
    if (created) {
      const token = await mintToken(secret, {
        subject: "admin",
        scopes: [...SCOPES],
        ttlSeconds: FIRST_TOKEN_TTL_SECONDS,
        issuer: config.auth.issuer,
        audience: config.auth.audience,
      });
      firstStart = { secretPath, token };
    }
  }
  const verifier = await createVerifier(config.auth);

  // Bind before the database is opened, so a port in use never touches the file. A request
  // that arrives while the store opens waits for the app.
  const ready = Promise.withResolvers<Pick<ReturnType<typeof createApp>, "fetch">>();
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve(
      {
        hostname: config.host,
        port: config.port,
        onListen: () => {},
        // The app answers its own errors: what reaches here broke a body already under way
        // (an export cut short), to log as any other line rather than as Deno's stack trace.
        onError: (error) => {
          logger.log("error", "response broken off", { error: firstLine(error) });
          return new Response(null, { status: 500 });
        },
      },
      async (request, info) => (await ready.promise).fetch(request, info),
    );
  } catch (error) {
    throw new StartupError(`Cannot listen on ${config.host}:${config.port}: ${firstLine(error)}`);
  }

  if (restore !== undefined) {
    try {
      const kept = await restoreDatabase(config.databasePath, restore, {
        check: (path) => checkBackupFile(path, duckdbOptions),
        settle: (path) => settleFile(path, duckdbOptions),
      });
      print(
        `Restored "${restore}" into ${config.databasePath}` +
          (kept ? `; the database it replaced is kept as ${kept}` : ""),
      );
    } catch (error) {
      ready.resolve({ fetch: () => new Response(null, { status: 503 }) });
      await server.shutdown();
      throw new StartupError(
        `Cannot restore "${restore}": ${firstLine(error)}; nothing was changed`,
      );
    }
  }

  let store: Store;
  try {
    store = config.databaseUrl === undefined
      ? await openStore(duckdbOptions)
      : await openPostgresStore({
        url: config.databaseUrl,
        maxConnections: config.databasePoolSize,
        readTimeoutMs: config.queryTimeoutMs,
        logger,
        spoolDir,
      });
  } catch (error) {
    // A process exits now, which releases the port; a caller that goes on (a test) must not be
    // left with it open, nor with requests waiting for an app that will never come.
    ready.resolve({ fetch: () => new Response(null, { status: 503 }) });
    await server.shutdown();
    const where = config.databaseUrl === undefined
      ? config.databasePath
      : withoutPassword(config.databaseUrl);
    throw new StartupError(`Cannot open database "${where}": ${firstLine(error)}`);
  }
  // Only now, holding the database's lock, is the spool ours to clear: a second instance
  // refused above must not delete the uploads of the one running.
  for await (const entry of Deno.readDir(spoolDir)) {
    await Deno.remove(`${spoolDir}/${entry.name}`, { recursive: true });
  }

  const backups = await Backups.open(store, duckdbOptions.backupDir, logger);
  const pgwireRegistry = new Registry();
  let pgwire: Pgwire | undefined;
  if (config.pgwire) {
    try {
      pgwire = await startPgwire({
        host: config.host,
        port: config.pgwire.port,
        tls: config.pgwire.tls && {
          cert: await pemText(config.pgwire.tls.cert, "PGWIRE_TLS_CERT"),
          key: await pemText(config.pgwire.tls.key, "PGWIRE_TLS_KEY"),
        },
        maxConnections: config.pgwire.maxConnections,
        idleMs: config.pgwire.idleMs,
        maxMessageBytes: config.pgwire.maxMessageBytes,
        queryTimeoutMs: config.queryTimeoutMs,
        store,
        verifier,
        logger,
        registry: pgwireRegistry,
      });
    } catch (error) {
      ready.resolve({ fetch: () => new Response(null, { status: 503 }) });
      await server.shutdown();
      await store.close().catch(() => {});
      throw new StartupError(
        error instanceof StartupError
          ? error.message
          : `Cannot listen for PostgreSQL clients on ${config.host}:${config.pgwire.port}: ${
            firstLine(error)
          }`,
      );
    }
  }
  ready.resolve(createApp({
    metricsRegistries: [pgwireRegistry],
    store,
    backups,
    verifier,
    logger,
    maxJsonBytes: config.maxJsonBytes,
    maxUploadBytes: config.maxUploadBytes,
    maxSheetRows: config.maxSheetRows,
    maxSheetBytes: config.maxSheetBytes,
    metricsAccess: config.metricsAccess,
    corsOrigins: config.corsOrigins,
    bodyIdleMs: config.bodyIdleMs,
    queryTimeoutMs: config.queryTimeoutMs,
    readsPerToken: config.readsPerToken,
    spoolDir,
  }));
  const { hostname, port } = server.addr;
  print(`Listening on http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}/`);
  // A wildcard address is no place to open in a browser; the machine's own name is.
  const host = hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname;
  print(`The web UI: http://${host.includes(":") ? `[${host}]` : host}:${port}${UI_PATH}`);
  if (pgwire) {
    print(
      `PostgreSQL protocol on ${
        hostname.includes(":") ? `[${hostname}]` : hostname
      }:${pgwire.port}` +
        (config.pgwire?.tls ? " (TLS)" : ""),
    );
  }
  if (firstStart) {
    print(
      `Created a signing secret in ${firstStart.secretPath}.` +
        ` A token with every scope, valid for 24 hours (paste it into the web UI to sign in):` +
        `\n${firstStart.token}`,
    );
  }

  const stopTrim = startMemoryTrim(config.memoryTrimMs, logger);
  const stopBackups = backups && config.backupIntervalMs !== undefined
    ? backups.schedule(config.backupIntervalMs, config.backupKeep)
    : () => Promise.resolve();

  let stopped: Promise<void> | undefined;
  return {
    addr: server.addr,
    ...(pgwire ? { pgwirePort: pgwire.port } : {}),
    stop: () =>
      stopped ??= (async () => {
        // Stop accepting, let requests in flight finish, then checkpoint and close the file.
        // What still runs after a grace (a query up to its deadline, an export to a slow
        // client) is interrupted, so that a stop never waits for a client.
        const grace = setTimeout(
          () => store.interrupt?.(ApiError.unavailable("The service is stopping", 1)),
          SHUTDOWN_GRACE_MS,
        );
        // PostgreSQL clients are told the service is going, their queries interrupted.
        await pgwire?.stop();
        await server.shutdown().finally(() => clearTimeout(grace));
        await stopTrim();
        // A scheduled backup answers no request, so the grace above did not reach it: it is
        // broken off (its file removed), not waited for.
        if (backups?.running) store.interrupt?.(ApiError.unavailable("The service is stopping"));
        await stopBackups();
        await store.close();
      })(),
  };
}

/** How long requests in flight are given to end once the service is stopping. */
const SHUTDOWN_GRACE_MS = 2_000;

/** How long a stop may take before the process ends without its closing checkpoint. */
const STOP_LIMIT_MS = 9_000;

/**
 * Stops `service` for `signal` as the process does, logging why and how it ended: 0 once the
 * database is checkpointed and closed, 1 when the closing checkpoint failed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLogger } from "./log.ts";
 * import { shutDown } from "./server.ts";
 *
 * const lines: string[] = [];
 * const logger = createLogger("info", (line) => lines.push(line));
 * const addr = { transport: "tcp" as const, hostname: "127.0.0.1", port: 0 };
 * const closed = { addr, stop: () => Promise.resolve() };
 * const unflushed = { addr, stop: () => Promise.reject(new Error("Out of Memory")) };
 * assert.equal(await shutDown(closed, "SIGTERM", logger), 0);
 * assert.equal(await shutDown(unflushed, "SIGINT", logger), 1);
 * assert.deepEqual(lines.map((line) => JSON.parse(line).message), [
 *   "shutting down",
 *   "stopped",
 *   "shutting down",
 *   "the closing checkpoint failed; the next start replays the log",
 * ]);
 * ```
 */
export async function shutDown(service: Service, signal: string, logger: Logger): Promise<number> {
  logger.log("info", "shutting down", { signal });
  let late: ReturnType<typeof setTimeout> | undefined;
  try {
    const outlasted = new Promise<"late">((resolve) => {
      late = setTimeout(() => resolve("late"), STOP_LIMIT_MS);
    });
    if (await Promise.race([service.stop(), outlasted]) === "late") {
      // DuckDB can be inside work that does not look at interrupts (every commit is in its
      // write-ahead log, which the next start replays); PostgreSQL ends the session's work
      // itself when the connection goes. The process ends regardless.
      logger.log(
        "error",
        "the service did not stop in time and exits without closing the database",
        {
          seconds: STOP_LIMIT_MS / 1000,
        },
      );
      return 1;
    }
  } catch (error) {
    // Every commit is in the write-ahead log, which the next start replays: nothing is
    // lost, but the exit says the file was not left checkpointed.
    logger.log("error", "the closing checkpoint failed; the next start replays the log", {
      error: error instanceof Error ? error.message : String(error),
    });
    return 1;
  } finally {
    clearTimeout(late);
  }
  logger.log("info", "stopped");
  return 0;
}

async function ensureDirectory(path: string, variable: string): Promise<void> {
  try {
    await Deno.mkdir(path, { recursive: true });
    const probe = `${path}/.write-probe-${crypto.randomUUID()}`;
    await Deno.writeTextFile(probe, "");
    await Deno.remove(probe);
  } catch (error) {
    throw new StartupError(
      `${variable} "${path}" is not a writable directory: ${firstLine(error)}`,
    );
  }
}

/** A PEM value as given, or the text of the file it names. */
async function pemText(value: string, variable: string): Promise<string> {
  if (value.includes("-----BEGIN")) return value;
  try {
    return await Deno.readTextFile(value);
  } catch (error) {
    throw new StartupError(`${variable} "${value}" cannot be read: ${firstLine(error)}`);
  }
}

/** A database URL fit for a log line: its password, if any, left out. */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "…";
    return parsed.toString();
  } catch {
    return "DATABASE_URL";
  }
}

/** The first line of an error's message, without the `(os error 13): open '/path'` Deno adds. */
function firstLine(error: unknown): string {
  const line = (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
  return line.replace(/ \(os error \d+\).*$/, "");
}
