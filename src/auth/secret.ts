/**
 * The development secret: created on first start when no key is configured.
 *
 * @module
 */

import { base64url } from "jose";

/**
 * Reads the secret at `path`, creating it (random, 256 bits, file mode 0600) when absent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ensureSecret } from "./secret.ts";
 *
 * const dir = await Deno.makeTempDir();
 * const first = await ensureSecret(`${dir}/jwt-secret`);
 * const again = await ensureSecret(`${dir}/jwt-secret`);
 * assert.equal(first.created, true);
 * assert.equal(again.created, false);
 * assert.equal(again.secret, first.secret);
 * assert.equal((await Deno.stat(`${dir}/jwt-secret`)).mode! & 0o777, 0o600);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function ensureSecret(path: string): Promise<{ secret: string; created: boolean }> {
  try {
    return { secret: (await Deno.readTextFile(path)).trim(), created: false };
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const secret = base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
  try {
    await Deno.writeTextFile(path, `${secret}\n`, { mode: 0o600, createNew: true });
  } catch (error) {
    // Another process created it first: use theirs.
    if (error instanceof Deno.errors.AlreadyExists) return await ensureSecret(path);
    throw error;
  }
  await Deno.chmod(path, 0o600);
  return { secret, created: true };
}
