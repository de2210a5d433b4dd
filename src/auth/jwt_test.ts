import assert from "node:assert/strict";
import { SignJWT } from "jose";
import { ApiError } from "../errors.ts";
import { createVerifier, mintToken } from "./jwt.ts";

const SECRET = "a-secret-long-enough-for-every-hmac-algorithm-0123456789abcdef";

Deno.test("createVerifier() remembers a verified token only until it expires", async () => {
  let clock = Date.now();
  const verifier = await createVerifier(
    { key: { kind: "hmac", secret: SECRET } },
    Deno.readTextFile,
    () => clock,
  );
  const token = await mintToken(SECRET, {
    subject: "ada",
    scopes: ["tables:read"],
    ttlSeconds: 60,
  });
  assert.equal((await verifier.verify(token)).subject, "ada");
  // Within the 30 s of skew after expiry the token still holds, as jose would say.
  clock += 85_000;
  assert.equal((await verifier.verify(token)).subject, "ada");
  clock += 10_000;
  await assert.rejects(
    () => verifier.verify(token),
    (error) => error instanceof ApiError && error.status === 401 && /expired/.test(error.message),
  );
});

Deno.test("createVerifier() verifies HS256, HS384 and HS512 with the secret, nothing else", async () => {
  const verifier = await createVerifier({ key: { kind: "hmac", secret: SECRET } });
  const key = new TextEncoder().encode(SECRET);
  for (const alg of ["HS256", "HS384", "HS512"]) {
    const token = await new SignJWT({ scope: "tables:read" }).setProtectedHeader({ alg })
      .setSubject(alg).setExpirationTime("1m").sign(key);
    assert.equal((await verifier.verify(token)).subject, alg);
  }
  const forged = await new SignJWT({ scope: "tables:read" }).setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("1m").sign(new TextEncoder().encode(`${SECRET}-other`));
  await assert.rejects(() => verifier.verify(forged), ApiError);
});
