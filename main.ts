/**
 * The table service: parse configuration, open the store, build the app, serve.
 *
 * @module
 */

import { createApp } from "./src/http/app.ts";
import { createVerifier, mintToken, SCOPES } from "./src/auth/jwt.ts";
import { ensureSecret } from "./src/auth/secret.ts";
import { ConfigError, flagsToEnv, parseConfig } from "./src/config.ts";
import { createLogger } from "./src/log.ts";
import { startMemoryTrim } from "./src/memory_trim.ts";
import { openStore } from "./src/store/duckdb/mod.ts";

/** Lifetime of the token printed when a development secret is created. */
const FIRST_TOKEN_TTL_SECONDS = 24 * 60 * 60;

async function main(): Promise<void> {
  const config = parseConfig({ ...Deno.env.toObject(), ...flagsToEnv(Deno.args) });
  const logger = createLogger(config.logLevel);

  await ensureDirectory(config.dataDir, "DATA_DIR");
  await Deno.mkdir(config.spoolDir, { recursive: true });
  await Deno.mkdir(`${config.dataDir}/tmp`, { recursive: true });
  const spoolDir = await Deno.realPath(config.spoolDir);

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
  const ready = Promise.withResolvers<ReturnType<typeof createApp>>();
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

  let store;
  try {
    store = await openStore({
      path: config.databasePath,
      spoolDir,
      tempDir: await Deno.realPath(`${config.dataDir}/tmp`),
      memoryBytes: config.duckdbMemoryBytes,
      blockBytes: config.duckdbBlockBytes,
      logger,
    });
  } catch (error) {
    throw new StartupError(`Cannot open database "${config.databasePath}": ${firstLine(error)}`);
  }
  // Only now, holding the database's lock, is the spool ours to clear: a second instance
  // refused above must not delete the uploads of the one running.
  for await (const entry of Deno.readDir(spoolDir)) {
    await Deno.remove(`${spoolDir}/${entry.name}`, { recursive: true });
  }

  ready.resolve(createApp({
    store,
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
    spoolDir,
  }));
  const { hostname, port } = server.addr;
  console.log(
    `Listening on http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}/`,
  );
  if (firstStart) {
    console.log(
      `Created a signing secret in ${firstStart.secretPath}.` +
        ` A token with every scope, valid for 24 hours:\n${firstStart.token}`,
    );
  }

  const stopTrim = startMemoryTrim(config.memoryTrimMs, logger);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log("info", "shutting down", { signal });
    // Stop accepting, let requests in flight finish, then checkpoint and close the file.
    await server.shutdown();
    await stopTrim();
    try {
      await store.close();
    } catch (error) {
      // Every commit is in the write-ahead log, which the next start replays: nothing is
      // lost, but the exit says the file was not left checkpointed.
      logger.log("error", "the closing checkpoint failed; the next start replays the log", {
        error: error instanceof Error ? error.message : String(error),
      });
      Deno.exit(1);
    }
    logger.log("info", "stopped");
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
}

/** A start-up failure worth one line and a non-zero exit, without a stack trace. */
class StartupError extends Error {}

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

/** The first line of an error's message, without the `(os error 13): open '/path'` Deno adds. */
function firstLine(error: unknown): string {
  const line = (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
  return line.replace(/ \(os error \d+\).*$/, "");
}

if (import.meta.main) {
  try {
    await main();
  } catch (error) {
    if (error instanceof ConfigError || error instanceof StartupError) {
      console.error(error.message);
      Deno.exit(1);
    }
    throw error;
  }
}
