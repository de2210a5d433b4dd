import assert from "node:assert/strict";
import { assertSpoolEmpty, TestServer } from "./helpers/server.ts";
import { controls, HOSTILE_ENV, judge, runCatalogue, seed } from "./reliability/hostile.ts";

Deno.test("hostile catalogue: every request is refused in the error shape, the server stays up and nothing changes", async () => {
  const server = await TestServer.start(HOSTILE_ENV);
  try {
    await seed(server);
    const report = await runCatalogue(server);
    console.log(
      Object.entries(report.groups).map(([group, { tried }]) => `${group} ${tried}`).join(", "),
    );
    // The first wrong answers, which a long list's tail would hide, name the cause.
    assert.equal(report.failures.length, 0, report.failures.slice(0, 20).join("\n"));
    assert.ok(report.tried >= 300, `only ${report.tried} hostile requests`);
    assert.equal(report.correct, report.tried);

    await assertSpoolEmpty(server);

    // The bodies the wrong-type cases were made from are valid: the defects were refused.
    for (const request of controls()) {
      const answer = await server.request(request.method, request.path, { body: request.body });
      assert.equal(judge(request, answer), undefined, request.label);
    }
  } finally {
    await server.dispose();
  }
});
