/**
 * Test support: the application in process, over a given store, for tests that need no
 * database (route listings, failure handling).
 *
 * @module
 */

import { createApp } from "../../src/http/app.ts";
import { createVerifier } from "../../src/auth/jwt.ts";
import { createLogger } from "../../src/log.ts";
import type { Store } from "../../src/store/store.ts";
import { TEST_SECRET } from "./server.ts";

/** The app over `store`, verifying tokens minted with the test secret; lines go to `log`. */
export async function appOver(
  store: Store,
  log: (line: string) => void = () => {},
): Promise<ReturnType<typeof createApp>> {
  return createApp({
    store,
    verifier: await createVerifier({ key: { kind: "hmac", secret: TEST_SECRET } }),
    logger: createLogger("error", log),
    maxJsonBytes: 1024,
    maxUploadBytes: 1024,
    maxSheetRows: 100,
    maxSheetBytes: 1024,
    spoolDir: "/nonexistent",
    metricsAccess: "token",
    corsOrigins: [],
    bodyIdleMs: 30_000,
    queryTimeoutMs: 30_000,
  });
}
