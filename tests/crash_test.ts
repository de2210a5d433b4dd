import assert from "node:assert/strict";
import { runCrashes } from "./reliability/crash.ts";

Deno.test(
  "crash safety: SIGKILL during a replace, an insert or a rebuild loses nothing acknowledged, leaves no table half-changed, and a keyed insert retried after it lands exactly once",
  async () => {
    const seed = Deno.env.get("CRASH_SEED");
    const report = await runCrashes({
      seed: seed === undefined ? undefined : Number(seed),
      log: (line) => console.log(line),
    });
    const failures = report.failures.map((f) => `- ${f}`).join("\n");
    const context = `seed ${report.seed}; failures:\n${failures}`;
    assert.ok(report.kills >= 20, `only ${report.kills} kills; ${context}`);
    for (const [operation, kills] of Object.entries(report.byOperation)) {
      assert.ok(kills >= 6, `only ${kills} kills during ${operation}; ${context}`);
    }
    assert.equal(report.rowsLost, 0, `acknowledged rows lost; ${context}`);
    assert.ok(report.batches.replayed > 0, `no acknowledged batch was retried; ${context}`);
    assert.deepEqual(report.failures, [], context);
    assert.equal(report.survived, report.kills, `not every kill was survived; ${context}`);
  },
);
