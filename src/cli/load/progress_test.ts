import assert from "node:assert/strict";
import { formatBytes, formatDuration, formatProgress, Progress } from "./progress.ts";

Deno.test("formatProgress() shows bytes, percent, rate and time left, then the time taken", () => {
  assert.equal(
    formatProgress(5_000_000, 20_000_000, 1000),
    "[######------------------]  25%  5.0 MB / 20.0 MB  5.0 MB/s  0:03 left",
  );
  assert.equal(
    formatProgress(0, 20_000_000, 0),
    "[------------------------]   0%  0 B / 20.0 MB  0 B/s  --:-- left",
  );
  assert.equal(
    formatProgress(20_000_000, 20_000_000, 4000),
    "[########################] 100%  20.0 MB / 20.0 MB  5.0 MB/s  sent in 4.0 s",
  );
  assert.ok(formatProgress(0, 0, 10).includes("100%  0 B / 0 B"));
  assert.equal(formatBytes(999), "999 B");
  assert.equal(formatBytes(1_234), "1.2 kB");
  assert.equal(formatDuration(59.5), "1:00");
  assert.equal(formatDuration(Infinity), "--:--");
});

Deno.test("Progress redraws a terminal line at most ten times a second", () => {
  const writes: string[] = [];
  let clock = 0;
  const total = 100_000_000;
  const progress = new Progress(total, {
    write: (text) => writes.push(text),
    terminal: true,
    now: () => clock,
  });
  // 2000 chunks over two seconds.
  for (let i = 1; i < 2000; i++) {
    clock += 1;
    progress.update((total / 2000) * i);
  }
  assert.ok(writes.length >= 18 && writes.length <= 20, `${writes.length} redraws`);
  assert.ok(writes.every((w) => w.startsWith("\r") && w.endsWith("\x1b[K")));
  progress.finish(total);
  assert.ok(writes.at(-1)!.startsWith(`\r[${"#".repeat(24)}] 100% `));
  assert.ok(writes.at(-1)!.endsWith("sent in 2.0 s\x1b[K\n"));
  progress.stop(); // Nothing more after the final line.
  assert.equal(writes.at(-1)!.endsWith("\n"), true);
});

Deno.test("Progress prints a few plain lines when standard error is not a terminal", () => {
  let out = "";
  let clock = 0;
  const progress = new Progress(8_000_000, {
    write: (text) => out += text,
    terminal: false,
    now: () => clock,
  });
  for (let sent = 65536; sent < 8_000_000; sent += 65536) {
    clock += 1;
    progress.update(sent);
  }
  progress.finish(8_000_000);
  const lines = out.split("\n").filter(Boolean);
  assert.equal(lines.length, 4, out);
  assert.ok(!out.includes("\r"));
  assert.match(lines[0]!, / 25% /);
  assert.match(lines[3]!, / 100% /);

  // A small body gets only its final line; an upload that stops early leaves no line open.
  let small = "";
  const quick = new Progress(500, { write: (t) => small += t, terminal: true, now: () => clock });
  clock += 1000;
  quick.update(250);
  quick.stop();
  assert.equal(small, "");
});
