/**
 * `deno task token`: mints a bearer token with the configured HMAC secret.
 *
 * ```sh
 * deno task token -- --sub ada --scope "tables:read tables:write" --schemas public,sales --ttl 1h
 * ```
 *
 * @module
 */

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { mintToken, SCOPES } from "../auth/jwt.ts";
import { ensureSecret } from "../auth/secret.ts";
import { sqlNameProblem } from "../catalog/names.ts";
import { ConfigError, parseConfig, parseDuration } from "../config.ts";

/** The command line's flags, as `parseArgs` takes them; {@link HELP} describes each. */
export const TOKEN_FLAGS = {
  sub: { type: "string", default: "admin" },
  scope: { type: "string", default: SCOPES.join(" ") },
  schemas: { type: "string" },
  ttl: { type: "string", default: "1h" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

/** What `--help` prints. */
export const HELP =
  `usage: deno task token -- [--sub NAME] [--scope SCOPES] [--schemas LIST] [--ttl TIME]

Mints a bearer token signed with the service's HMAC secret and prints it.

options:
      --sub NAME        the token's subject (default: admin)
      --scope SCOPES    scopes, separated by spaces or commas (default: all of them):
                        ${SCOPES.join(" ")}
      --schemas LIST    the schemas the token may touch, comma-separated (default: every one)
      --ttl TIME        its lifetime: 90s, 15m, 1h, 7d or seconds (default: 1h)
  -h, --help            this help

environment (the service's own, read the same way):
  AUTH_JWT_SECRET       the HMAC secret to sign with
  DATA_DIR              without AUTH_JWT_SECRET, the secret in DATA_DIR/jwt-secret, created
                        if missing (default: ./data)
  AUTH_ISSUER           the iss claim, when the service checks it
  AUTH_AUDIENCE         the aud claim, when the service checks it
  AUTH_JWT_PUBLIC_KEY   with either of these two set, the service verifies tokens with a
  AUTH_JWKS_FILE        public key: mint them where the private key lives`;

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args: args.filter((a) => a !== "--"),
    options: TOKEN_FLAGS,
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const ttlSeconds = parseDuration(values.ttl);
  if (ttlSeconds === undefined) {
    throw new ConfigError([`--ttl "${values.ttl}" is not a lifetime like 30m, 1h or 7d`]);
  }
  // Each would mint a token the service refuses (401) or one that may do nothing (403).
  if (values.sub.trim() === "") throw new ConfigError(["--sub is empty"]);
  const scopes = values.scope.split(/[\s,]+/).filter(Boolean);
  if (scopes.length === 0) {
    throw new ConfigError([`--scope names no scope; known: ${SCOPES.join(", ")}`]);
  }
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) {
    throw new ConfigError([`unknown scope ${unknown.join(", ")}; known: ${SCOPES.join(", ")}`]);
  }
  const schemas = values.schemas?.split(",").map((s) => s.trim()).filter(Boolean);
  if (schemas?.length === 0) {
    throw new ConfigError(["--schemas names no schema; leave it out for every schema"]);
  }
  const badSchemas = (schemas ?? []).flatMap((name) => {
    const problem = sqlNameProblem(name);
    return problem === undefined ? [] : [`schema name "${name}" ${problem}`];
  });
  if (badSchemas.length > 0) throw new ConfigError(badSchemas);

  const config = parseConfig(Deno.env.toObject());
  const key = config.auth.key;
  if (key.kind === "pem" || key.kind === "jwks") {
    throw new ConfigError([
      "the service verifies tokens with a public key; mint tokens where the private key lives",
    ]);
  }
  let secret: string;
  if (key.kind === "hmac") secret = key.secret;
  else {
    await Deno.mkdir(config.dataDir, { recursive: true });
    secret = (await ensureSecret(key.secretPath)).secret;
  }
  console.log(
    await mintToken(secret, {
      subject: values.sub,
      scopes,
      schemas,
      ttlSeconds,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
    }),
  );
}

/** Whether `error` is a wrong command line: a flag `parseArgs` refused, or a value of one. */
function wrongCommandLine(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS");
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (error) {
    // As `deno task load`: 2 for a wrong command line or configuration, 1 for anything else.
    if (error instanceof ConfigError || wrongCommandLine(error)) {
      const problems = error instanceof ConfigError ? error.problems.join("; ") : error;
      console.error(`error: ${problems instanceof Error ? problems.message : problems}`);
      console.error(HELP.split("\n")[0]);
      Deno.exit(2);
    }
    console.error(`Cannot mint a token: ${error instanceof Error ? error.message : String(error)}`);
    Deno.exit(1);
  }
}
