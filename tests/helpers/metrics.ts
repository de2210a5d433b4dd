/**
 * Test and bench support: reading the service's /metrics text.
 *
 * @module
 */

import assert from "node:assert/strict";

export interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** The samples of a Prometheus text exposition (the subset of the format the service writes). */
export function samples(text: string): Sample[] {
  return text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!;
    }
    return { name: match[1]!, labels, value: Number(match[3]) };
  });
}

/** The value of the one sample of `name` with `labels`; fails unless there is exactly one. */
export function value(all: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = all.filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  assert.equal(found.length, 1, `${name} ${JSON.stringify(labels)}: ${found.length} samples`);
  return found[0]!.value;
}
