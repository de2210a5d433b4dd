import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { VARIABLES } from "../src/config.ts";
import { TOKEN_FLAGS } from "../src/cli/token.ts";
import { errorOf, ok, TEST_SECRET, TestServer } from "./helpers/server.ts";

const ROOT = new URL("../", import.meta.url).pathname;

async function token(args: string[], env: Record<string, string>) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      `${ROOT}src/cli/token.ts`,
      ...args,
    ],
    env,
    clearEnv: true,
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout).trim(),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test("the token command mints tokens the service accepts, with the asked claims", async () => {
  const server = await TestServer.start();
  try {
    const result = await token(
      ["--", "--sub", "ada", "--scope", "tables:read", "--schemas", "public,sales", "--ttl", "2h"],
      { AUTH_JWT_SECRET: TEST_SECRET },
    );
    assert.equal(result.code, 0, result.stderr);
    const claims = decodeJwt(result.stdout);
    assert.equal(claims.sub, "ada");
    assert.equal(claims.scope, "tables:read");
    assert.deepEqual(claims.schemas, ["public", "sales"]);
    assert.equal(claims.exp! - claims.iat!, 7200);
    ok(await server.request("GET", "table", { token: result.stdout }));
    errorOf(await server.request("POST", "table/x", { token: result.stdout, body: {} }), 403);
  } finally {
    await server.dispose();
  }
});

Deno.test("the token command uses the generated secret of DATA_DIR", async () => {
  const server = await TestServer.start({ AUTH_JWT_SECRET: "" });
  try {
    const result = await token(["--sub", "bob"], { DATA_DIR: server.dataDir });
    assert.equal(result.code, 0, result.stderr);
    ok(await server.request("POST", "table/bobs", { token: result.stdout, body: {} }));
  } finally {
    await server.dispose();
  }
});

Deno.test("the token command refuses bad arguments and public-key configurations", async () => {
  const env = { AUTH_JWT_SECRET: TEST_SECRET };
  for (
    const [args, pattern] of [
      [["--ttl", "soon"], /--ttl "soon"/],
      [["--scope", "tables:admin"], /unknown scope tables:admin/],
      [["--colour", "red"], /colour/],
      // Tokens the service would refuse, or that could do nothing.
      [["--schemas", "bad name,x"], /schema name "bad name"/],
      [["--schemas", " , "], /--schemas names no schema/],
      [["--scope", ""], /--scope names no scope/],
      [["--sub", " "], /--sub is empty/],
    ] as [string[], RegExp][]
  ) {
    const result = await token(args, env);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, pattern);
    assert.match(result.stderr, /^usage: deno task token/m);
  }
  const publicKey = await token([], { AUTH_JWT_PUBLIC_KEY: "/some/key.pem" });
  assert.notEqual(publicKey.code, 0);
  assert.match(publicKey.stderr, /public key/);
});

Deno.test("the token command's --help lists every flag and the variables it reads", async () => {
  const result = await token(["--help"], {});
  assert.equal(result.code, 0, result.stderr);
  // Each flag and variable starts a line of its own: described, not just mentioned.
  for (const [name, spec] of Object.entries(TOKEN_FLAGS)) {
    const short = "short" in spec ? `-${spec.short}, ` : "";
    assert.match(result.stdout, new RegExp(`^ +${short}--${name}\\b`, "m"), `--${name}`);
  }
  assert.ok("help" in TOKEN_FLAGS);
  // Minting reads the data directory and the signing key's variables, whatever they become.
  for (const variable of VARIABLES.filter((v) => v === "DATA_DIR" || v.startsWith("AUTH_"))) {
    assert.match(result.stdout, new RegExp(`^ +${variable}\\b`, "m"), variable);
  }
});
