/**
 * The table service: parse configuration, start the service, stop it on a signal.
 *
 * @module
 */

import { ConfigError, flagsToEnv, parseConfig, restoreFlag } from "./src/config.ts";
import { createLogger } from "./src/log.ts";
import { shutDown, startService, StartupError } from "./src/server.ts";

async function main(): Promise<void> {
  const { restore, rest } = restoreFlag(Deno.args);
  const config = parseConfig({ ...Deno.env.toObject(), ...flagsToEnv(rest) });
  const logger = createLogger(config.logLevel);
  const service = await startService(config, logger, { restore });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    Deno.exit(await shutDown(service, signal, logger));
  };
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
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
