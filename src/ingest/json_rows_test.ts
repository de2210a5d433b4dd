import assert from "node:assert/strict";
import { ApiError } from "../errors.ts";
import { JsonRows } from "./json_rows.ts";
import type { RowsOptions, RowsSummary } from "./json_rows_summary.ts";

const RECORDS: RowsOptions = { envelope: false, allowArrays: false, maxEnvelopeBytes: 1 << 20 };
const UPLOAD: RowsOptions = { envelope: true, allowArrays: true, maxEnvelopeBytes: 1 << 20 };

/** The rows of a newline-delimited copy. */
function lines(out: string): unknown[] {
  return out.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}

function run(
  options: RowsOptions,
  text: string,
  cuts: number[] = [],
): { out: string; summary: RowsSummary } {
  const bytes = new TextEncoder().encode(text);
  const parts: Uint8Array[] = [];
  const pass = new JsonRows(options, (b) => parts.push(b.slice()));
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    pass.push(bytes.slice(at, cut));
    at = cut;
  }
  const summary = pass.finish();
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    all.set(p, o);
    o += p.length;
  }
  return { out: new TextDecoder().decode(all), summary };
}

/** Runs `text` whole and split at every byte, and once split at every byte at once. */
function runEverySplit(options: RowsOptions, text: string): { out: string; summary: RowsSummary } {
  const whole = run(options, text);
  const length = new TextEncoder().encode(text).length;
  for (let cut = 0; cut <= length; cut++) {
    const split = run(options, text, [cut]);
    assert.equal(split.out, whole.out, `split at ${cut}`);
    assert.deepEqual(split.summary, whole.summary, `split at ${cut}`);
  }
  const bytewise = run(options, text, Array.from({ length }, (_, i) => i));
  assert.equal(bytewise.out, whole.out);
  assert.deepEqual(bytewise.summary, whole.summary);
  // The same without key sampling past the first row: the fast path must agree on the rest.
  const unsampled = { ...options, keySampleRows: 1 };
  const fastWhole = run(unsampled, text).summary;
  assert.equal(
    run(unsampled, text, Array.from({ length }, (_, i) => i)).summary.keysComplete,
    fastWhole.keysComplete,
    "fast path keys checked byte by byte",
  );
  for (let cut = 0; cut <= length; cut++) {
    const fast = run(unsampled, text, [cut]);
    assert.equal(fast.summary.keysComplete, fastWhole.keysComplete, `fast keys, split at ${cut}`);
    assert.equal(fast.out, whole.out, `fast path, split at ${cut}`);
    assert.equal(fast.summary.rows, whole.summary.rows, `fast path rows, split at ${cut}`);
    assert.equal(fast.summary.form, whole.summary.form);
    assert.deepEqual(fast.summary.table, whole.summary.table);
  }
  return whole;
}

Deno.test("JsonRows copies a records array unchanged and learns its keys and row count", () => {
  const text =
    '[{"id": 1, "name": "a \\" [x]", "nested": {"k": [1, {"z": 2}]}}, {"name": "b", "id": 2, "extra": null}]';
  const { out, summary } = runEverySplit(RECORDS, text);
  assert.deepEqual(lines(out), JSON.parse(text));
  // The last row's line break too: DuckDB's JSON reader needs far more memory without it.
  assert.match(out, /^[^\n]+\n[^\n]+\n$/, "one line per row, each ending in a line break");
  assert.equal(summary.rows, 2);
  assert.equal(summary.form, "objects");
  assert.deepEqual(summary.keys, ["id", "name", "nested", "extra"]);
});

Deno.test("JsonRows decodes escaped and unicode keys", () => {
  const { summary } = runEverySplit(
    RECORDS,
    '[{"pr\\u00efce": 1, "Unit Price": 2, "单价": 3, "a\\"b": 4}]',
  );
  assert.deepEqual(summary.keys, ["prïce", "Unit Price", "单价", 'a"b']);
});

Deno.test("JsonRows takes rows from an upload envelope, in either member order", () => {
  for (
    const text of [
      '{"table": {"columns": [{"name": "a", "type": "int"}]}, "data": [{"a": 1}, {"a": 2}]}',
      '{"data": [{"a": 1}, {"a": 2}], "table": {"columns": [{"name": "a", "type": "int"}]}}',
      ' { "other" : [1, {"x": "]"}], "data" : [ {"a": 1} , {"a": 2} ] , "table" : {"columns": [{"name": "a", "type": "int"}]} } ',
    ]
  ) {
    const { out, summary } = runEverySplit(UPLOAD, text);
    assert.deepEqual(lines(out), [{ a: 1 }, { a: 2 }]);
    assert.deepEqual(summary.table, { columns: [{ name: "a", type: "int" }] });
    assert.equal(summary.rows, 2);
    assert.equal(summary.hasData, true);
  }
});

Deno.test("JsonRows rewrites positional rows to objects keyed by position", () => {
  const { out, summary } = runEverySplit(
    UPLOAD,
    '{"data": [[1, "a,]"], [], [3, [4, 5], {"k": 6}], [ 7 ]]}',
  );
  assert.deepEqual(lines(out), [{ 0: 1, 1: "a,]" }, {}, { 0: 3, 1: [4, 5], 2: { k: 6 } }, {
    0: 7,
  }]);
  assert.equal(summary.form, "arrays");
  assert.deepEqual(summary.keys, ["0", "1", "2"]);
  assert.deepEqual([...summary.firstRowOfLength], [[2, 0], [0, 1], [3, 2], [1, 3]]);
});

Deno.test("JsonRows accepts empty data, null data and a missing table", () => {
  assert.equal(runEverySplit(RECORDS, "[]").summary.rows, 0);
  assert.equal(runEverySplit(UPLOAD, '{"data": []}').out.trim(), "");
  const none = runEverySplit(UPLOAD, '{"table": null, "data": null}');
  assert.equal(none.summary.hasData, false);
  assert.equal(none.summary.table, undefined);
  assert.equal(runEverySplit(UPLOAD, "{}").summary.hasData, false);
});

Deno.test("JsonRows refuses bodies that are not arrays of rows with a 400", () => {
  const cases: [RowsOptions, string][] = [
    [RECORDS, '{"a": 1}'],
    [RECORDS, "[1, 2]"],
    [RECORDS, '[{"a": 1}, 5]'],
    [RECORDS, '[["positional"]]'],
    [RECORDS, '[{"a": 1},]'],
    [RECORDS, '[{"a": 1}'],
    [RECORDS, '[{"a": "unterminated}]'],
    [RECORDS, '[{"a": 1}] trailing'],
    [RECORDS, '[{"a": 1}] []'],
    [RECORDS, ""],
    [RECORDS, "\u0000[]"],
    [RECORDS, '[{"a": 1}, {"b": 2}, 3]'],
    [RECORDS, '[{"a": 1}, {"b": 2},]'],
    [RECORDS, '[{"a": 1}, {"b": 2}\u0001]'],
    [RECORDS, '[{"a": 1}, {"b": 2}, [3]]'],
    [UPLOAD, "[]"],
    [UPLOAD, '{"data": 5}'],
    [UPLOAD, '{"data": {"a": 1}}'],
    [UPLOAD, '{"data": [{"a": 1}, [1]]}'],
    [UPLOAD, '{"data": [], "data": []}'],
    [UPLOAD, '{"table": {"columns": [}, "data": []}'],
    [UPLOAD, '{"x": [1}, "data": []}'],
    [UPLOAD, '{"x": "\\u12", "data": []}'],
    [UPLOAD, '{"x": 01, "data": []}'],
    [UPLOAD, '{"data": [], "x": NaN}'],
    [UPLOAD, '{"table": {"columns": []}, "data": [], "x": tru}'],
    [UPLOAD, '{"data": [],}'],
    [UPLOAD, '{"data" [] }'],
    [RECORDS, "[".repeat(10000) + "]".repeat(10000)],
    [RECORDS, `[{"a": ${"[".repeat(10000)}${"]".repeat(10000)}}]`],
  ];
  for (
    const [options, text] of [
      ...cases,
      ...cases.map(([o, t]) => [{ ...o, keySampleRows: 0 }, t] as const),
    ]
  ) {
    assert.throws(() => run(options, text), (error: unknown) => {
      assert.ok(error instanceof ApiError, `${text.slice(0, 40)}: ${error}`);
      assert.equal(error.status, 400, text.slice(0, 40));
      return true;
    }, text.slice(0, 40));
  }
});

Deno.test("JsonRows refuses a table member over the envelope limit with 413", () => {
  const big = `{"table": {"columns": [${
    '{"name": "a", "type": "int"},'.repeat(100)
  }{"name": "b", "type": "int"}]}, "data": []}`;
  assert.throws(
    () => run({ ...UPLOAD, maxEnvelopeBytes: 500 }, big),
    (e: unknown) => e instanceof ApiError && e.status === 413,
  );
});

Deno.test("JsonRows counts many object rows the same on the fast path", () => {
  const rows = Array.from(
    { length: 50 },
    (_, i) => ({ i, s: `x"]}{[,${i}`, n: { a: [i, { b: "}" }] } }),
  );
  const text = JSON.stringify(rows, null, 1);
  const { out, summary } = runEverySplit({ ...RECORDS, keySampleRows: 1 }, text);
  assert.deepEqual(lines(out), rows);
  assert.equal(out.split("\n").length, 51, "one line per row, even pretty-printed");
  assert.equal(summary.rows, 50);
});

Deno.test("JsonRows collects keys from the sample rows only, and says so", () => {
  const text = '[{"a": 1}, {"b": 2}, {"c": 3}]';
  const sampled = runEverySplit({ ...RECORDS, keySampleRows: 2 }, text).summary;
  assert.deepEqual(sampled.keys, ["a", "b"]);
  assert.equal(sampled.keysComplete, false);
  const all = runEverySplit({ ...RECORDS, keySampleRows: 3 }, text).summary;
  assert.deepEqual(all.keys, ["a", "b", "c"]);
  assert.equal(all.keysComplete, true);
});

Deno.test("JsonRows ends strings on the fast path only at quotes after an even backslash run", () => {
  const rows = Array.from({ length: 6 }, (_, i) => ({
    i,
    s: `${"\\".repeat(i)}"],{${"\\".repeat(i + 1)}`,
    t: '\\\\"}',
  }));
  const text = JSON.stringify(rows);
  const { out, summary } = runEverySplit({ ...RECORDS, keySampleRows: 1 }, text);
  assert.deepEqual(lines(out), rows);
  assert.equal(summary.rows, 6);
});

Deno.test("JsonRows vouches for the keys past the sample only when each is the sampled key", () => {
  const cases: [string, boolean][] = [
    ['[{"a": 1, "bb": "x"}, {"a": 2, "bb": "y"},\n {"a": 3, "bb": {"c": [1, "}"]}}]', true],
    ['[{"a": 1, "bb": 2}, {"a": 3}, {}]', true],
    ['[{"a": 1, "bb": 2}, {"a": 3, "bb": 4}, {"a": 5, "cc": 6}]', false],
    ['[{"a": 1, "bb": 2}, {"bb": 3, "a": 4}]', false],
    ['[{"a": 1, "bb": 2}, {"\\u0061": 3}]', false],
  ];
  for (const [text, complete] of cases) {
    const { summary } = runEverySplit(RECORDS, text);
    const fast = run({ ...RECORDS, keySampleRows: 1 }, text).summary;
    assert.equal(fast.keysComplete, complete, text);
    // With every row sampled the keys are complete by definition.
    assert.equal(summary.keysComplete, true);
  }
});

Deno.test("JsonRows refuses a key repeated inside one row with a 400 naming the row and key", () => {
  const cases: [string, number, string][] = [
    ['[{"a": 1, "a": 2}]', 0, "a"],
    ['[{"a": 1}, {"b": 1, "c": {"x": 1, "x": 2}, "b": 2}]', 1, "b"],
    ['[{"a": 1, "b": 2}, {"b": 1, "\\u0062": 2}]', 1, "b"],
    // Past the sample, on the fast path: keys matching the sampled ones, one of them twice.
    ['[{"a": 1, "b": 2}, {"b": 3}, {"b": 4, "b": 5}]', 2, "b"],
  ];
  for (const [text, row, key] of cases) {
    for (const options of [RECORDS, { ...RECORDS, keySampleRows: 2 }]) {
      for (const cut of [0, text.length >> 1, text.length - 3]) {
        assert.throws(() => run(options, text, [cut]), (error: unknown) => {
          assert.ok(error instanceof ApiError, String(error));
          assert.equal(error.status, 400, text);
          assert.deepEqual(error.details, [
            { row, column: key, message: `Key "${key}" appears more than once in the row` },
          ]);
          return true;
        }, text);
      }
    }
  }
  // A key nested in a value, or the same key in two rows, is no repeat.
  for (const text of ['[{"a": {"a": 1}}, {"a": 2}]', '[{"a": 1, "b": [{"a": 1}]}, {"a": 1}]']) {
    assert.equal(runEverySplit(RECORDS, text).summary.rows, 2);
  }
});
