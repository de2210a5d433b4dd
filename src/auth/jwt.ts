/**
 * Bearer tokens: verification with pinned algorithms, and minting with an HMAC secret.
 *
 * The algorithm is never taken from the token: it must be one the configured key allows,
 * so `alg: none` and an HMAC token signed with a public key's text both fail.
 *
 * @module
 */

import {
  createLocalJWKSet,
  type CryptoKey,
  errors,
  importSPKI,
  importX509,
  type JSONWebKeySet,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from "jose";
import { sqlNameProblem } from "../catalog/names.ts";
import { type AuthConfig, ConfigError } from "../config.ts";
import { ApiError } from "../errors.ts";

/** Every scope the service knows. */
export const SCOPES = [
  "tables:read",
  "tables:write",
  "templates:read",
  "templates:write",
  "admin",
] as const;
/** One of {@link SCOPES}. */
export type Scope = typeof SCOPES[number];

/** Who is calling and what they may do. */
export interface Principal {
  readonly subject: string;
  readonly scopes: ReadonlySet<Scope>;
  /** Schemas the token is confined to (lower case); undefined when unconfined. */
  readonly schemas?: readonly string[];
}

/** Checks a bearer token and says who holds it. */
export interface TokenVerifier {
  verify(token: string): Promise<Principal>;
}

/** Clock skew tolerated on `exp`, `nbf` and `iat`. */
const SKEW_SECONDS = 30;
/** Verified tokens remembered; the oldest is forgotten first. */
const VERIFIED_TOKENS = 1024;
const HMAC_ALGORITHMS = ["HS256", "HS384", "HS512"];
const ASYMMETRIC_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];

type KeyInput = Parameters<typeof jwtVerify>[1];

/**
 * Builds the verifier for the configured key. A PEM value may be the key text or a path to
 * it; problems with the key become a {@link ConfigError} naming the variable.
 */
export async function createVerifier(
  auth: AuthConfig,
  readTextFile: (path: string) => Promise<string> = Deno.readTextFile,
  now: () => number = Date.now,
): Promise<TokenVerifier> {
  const { key, algorithms } = await loadKey(auth, readTextFile);
  // Verified tokens, so a client sending the same token on every request pays for its
  // signature once. The key never changes while the service runs; only expiry can end a
  // token's validity, and a hit is checked against it exactly as jose checks `exp`.
  const verified = new Map<string, { principal: Principal; expiresMs: number }>();
  return {
    async verify(token: string): Promise<Principal> {
      const hit = verified.get(token);
      if (hit && now() < hit.expiresMs) return hit.principal;
      verified.delete(token);
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key, {
          algorithms,
          issuer: auth.issuer,
          audience: auth.audience,
          requiredClaims: ["exp"],
          clockTolerance: SKEW_SECONDS,
          currentDate: new Date(now()),
        }));
      } catch (error) {
        throw ApiError.unauthorized(describeJoseError(error));
      }
      if (typeof payload.iat === "number" && payload.iat > now() / 1000 + SKEW_SECONDS) {
        throw ApiError.unauthorized("Token is issued in the future");
      }
      const principal = principalOf(payload);
      if (verified.size >= VERIFIED_TOKENS) verified.delete(verified.keys().next().value!);
      verified.set(token, { principal, expiresMs: (payload.exp! + SKEW_SECONDS) * 1000 });
      return principal;
    },
  };
}

async function loadKey(
  auth: AuthConfig,
  readTextFile: (path: string) => Promise<string>,
): Promise<{ key: KeyInput; algorithms: string[] }> {
  const source = auth.key;
  switch (source.kind) {
    case "hmac":
      return await hmacKeys(source.secret);
    case "generated":
      return await hmacKeys((await readTextFile(source.secretPath)).trim());
    case "pem":
      return await loadPem(source.value, readTextFile);
    case "jwks":
      return await loadJwks(source.path, readTextFile);
  }
}

async function loadPem(
  value: string,
  readTextFile: (path: string) => Promise<string>,
): Promise<{ key: KeyInput; algorithms: string[] }> {
  let pem = value;
  if (!value.startsWith("-----BEGIN")) {
    try {
      pem = await readTextFile(value);
    } catch (error) {
      throw new ConfigError([
        `AUTH_JWT_PUBLIC_KEY file "${value}" cannot be read: ${(error as Error).message}`,
      ]);
    }
  }
  pem = pem.replaceAll("\\n", "\n").trim();
  const certificate = pem.includes("BEGIN CERTIFICATE");
  const keys = new Map<string, CryptoKey>();
  for (const alg of ASYMMETRIC_ALGORITHMS) {
    try {
      keys.set(alg, certificate ? await importX509(pem, alg) : await importSPKI(pem, alg));
    } catch {
      // Not a key of this algorithm's family; the next one may fit.
    }
  }
  if (keys.size === 0) {
    throw new ConfigError([
      "AUTH_JWT_PUBLIC_KEY is not a PEM public key or certificate (RSA, EC P-256/384/521 or Ed25519)",
    ]);
  }
  return byAlgorithm(keys);
}

/**
 * The HMAC secret as one imported key per algorithm, imported once: given the secret's
 * bytes, jose would import a key again for every token it verifies.
 */
async function hmacKeys(secret: string): Promise<{ key: KeyInput; algorithms: string[] }> {
  const bytes = new TextEncoder().encode(secret);
  const keys = new Map<string, CryptoKey>();
  for (const alg of HMAC_ALGORITHMS) {
    const hash = `SHA-${alg.slice(2)}`;
    const key = await crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash }, false, [
      "verify",
    ]);
    // The same Web Crypto key; jose declares its own CryptoKey type, which Deno's does not match.
    keys.set(alg, key as unknown as CryptoKey);
  }
  return byAlgorithm(keys);
}

/** Keys chosen by the token's `alg`, which must be one of theirs. */
function byAlgorithm(
  keys: ReadonlyMap<string, CryptoKey>,
): { key: KeyInput; algorithms: string[] } {
  return {
    key: (header: { alg?: string }) => {
      const key = header.alg ? keys.get(header.alg) : undefined;
      if (!key) {
        throw new errors.JOSEAlgNotAllowed(`"alg" (Algorithm) Header Parameter value not allowed`);
      }
      return key;
    },
    algorithms: [...keys.keys()],
  };
}

async function loadJwks(
  path: string,
  readTextFile: (path: string) => Promise<string>,
): Promise<{ key: KeyInput; algorithms: string[] }> {
  let jwks: JSONWebKeySet;
  try {
    jwks = JSON.parse(await readTextFile(path));
    if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0) throw new Error("it has no keys");
  } catch (error) {
    throw new ConfigError([
      `AUTH_JWKS_FILE "${path}" is not a usable JWKS file: ${(error as Error).message}`,
    ]);
  }
  const algorithms = new Set<string>();
  for (const jwk of jwks.keys) {
    for (const alg of algorithmsOfJwk(jwk)) algorithms.add(alg);
  }
  if (algorithms.size === 0) {
    throw new ConfigError([`AUTH_JWKS_FILE "${path}" has no key of a supported type`]);
  }
  return { key: createLocalJWKSet(jwks), algorithms: [...algorithms] };
}

function algorithmsOfJwk(jwk: { kty?: string; alg?: string; crv?: string }): string[] {
  if (jwk.alg) return [jwk.alg];
  switch (jwk.kty) {
    case "RSA":
      return ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"];
    case "EC":
      return ({ "P-256": ["ES256"], "P-384": ["ES384"], "P-521": ["ES512"] } as Record<
        string,
        string[]
      >)[
        jwk.crv ?? ""
      ] ?? [];
    case "OKP":
      return jwk.crv === "Ed25519" ? ["EdDSA", "Ed25519"] : [];
    case "oct":
      return HMAC_ALGORITHMS;
    default:
      return [];
  }
}

function describeJoseError(error: unknown): string {
  if (error instanceof errors.JWTExpired) return "Token has expired";
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "nbf") return "Token is not valid yet";
    if (error.claim === "iat") return "Token is issued in the future";
    if (error.claim === "exp") return "Token has no expiry (exp)";
    return `Token claim "${error.claim}" is not accepted`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return "Token algorithm is not accepted";
  if (error instanceof errors.JWSSignatureVerificationFailed) return "Token signature is invalid";
  if (error instanceof errors.JWKSNoMatchingKey) return "Token key is not known";
  return "Token is malformed";
}

function principalOf(payload: JWTPayload): Principal {
  const scopes = new Set<Scope>();
  const granted = [
    ...(typeof payload.scope === "string" ? payload.scope.split(/\s+/) : []),
    ...(Array.isArray(payload.scopes) ? payload.scopes.filter((s) => typeof s === "string") : []),
  ];
  for (const scope of granted) {
    if ((SCOPES as readonly string[]).includes(scope)) scopes.add(scope as Scope);
  }
  return {
    subject: typeof payload.sub === "string" ? payload.sub : "",
    scopes,
    schemas: payload.schemas === undefined ? undefined : schemasOf(payload.schemas),
  };
}

/**
 * The schemas a present `schemas` claim confines its token to. Anything but an array of schema
 * names is 401: read as absent, a `null` or a misspelt claim would unconfine the token.
 */
function schemasOf(claim: unknown): string[] {
  const problem = 'Token claim "schemas" must be an array of schema names';
  if (!Array.isArray(claim)) throw ApiError.unauthorized(`${problem}, not ${claimText(claim)}`);
  for (const name of claim) {
    if (typeof name !== "string" || sqlNameProblem(name) !== undefined) {
      throw ApiError.unauthorized(`${problem}; ${claimText(name)} is not one`);
    }
  }
  return claim.map((name: string) => name.toLowerCase());
}

/** A claim's value for a message: short JSON in printable ASCII, as a header must be. */
function claimText(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return (json.length > 40 ? `${json.slice(0, 40)}...` : json)
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** What a minted token says. */
export interface TokenClaims {
  readonly subject: string;
  readonly scopes: readonly string[];
  readonly schemas?: readonly string[];
  readonly ttlSeconds: number;
  readonly issuer?: string;
  readonly audience?: string;
}

/**
 * Mints an HS256 token with the given HMAC secret.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createVerifier, mintToken } from "./jwt.ts";
 *
 * const secret = "a-secret-of-at-least-thirty-two-characters";
 * const token = await mintToken(secret, { subject: "ada", scopes: ["tables:read"], ttlSeconds: 60 });
 * const verifier = await createVerifier({ key: { kind: "hmac", secret } });
 * const principal = await verifier.verify(token);
 * assert.equal(principal.subject, "ada");
 * assert.ok(principal.scopes.has("tables:read"));
 * ```
 */
export async function mintToken(secret: string, claims: TokenClaims): Promise<string> {
  const jwt = new SignJWT({
    scope: claims.scopes.join(" "),
    ...(claims.schemas ? { schemas: [...claims.schemas] } : {}),
  })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(claims.subject)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + claims.ttlSeconds);
  if (claims.issuer) jwt.setIssuer(claims.issuer);
  if (claims.audience) jwt.setAudience(claims.audience);
  return await jwt.sign(new TextEncoder().encode(secret));
}

/** Does the principal hold `scope`? A `:write` scope implies its `:read`. */
export function hasScope(principal: Principal, scope: Scope): boolean {
  if (principal.scopes.has(scope)) return true;
  return scope.endsWith(":read") && principal.scopes.has(scope.replace(":read", ":write") as Scope);
}
