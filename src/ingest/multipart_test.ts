import assert from "node:assert/strict";
import { ApiError } from "../errors.ts";
import { type MultipartOptions, spoolMultipart } from "./multipart.ts";

const encoder = new TextEncoder();
const BOUNDARY = "----formBoundary7MA4YWxk";
const TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/** Bytes that look like a delimiter's start, to catch a parser that cuts too early. */
const FILE = new Uint8Array([
  0x50,
  0x4b,
  0x03,
  0x04,
  ...encoder.encode(`\r\n--${BOUNDARY.slice(0, 10)}\r\n-`),
  0x00,
  0xff,
  0x0d,
]);

function form(parts: { headers: string; data: Uint8Array | string }[], preamble = ""): Uint8Array {
  const chunks: Uint8Array[] = [encoder.encode(preamble)];
  for (const part of parts) {
    chunks.push(encoder.encode(`--${BOUNDARY}\r\n${part.headers}\r\n\r\n`));
    chunks.push(typeof part.data === "string" ? encoder.encode(part.data) : part.data);
    chunks.push(encoder.encode("\r\n"));
  }
  chunks.push(encoder.encode(`--${BOUNDARY}--\r\nepilogue`));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function stream(bytes: Uint8Array, cuts: number[]): ReadableStream<Uint8Array> {
  const points = [0, ...cuts, bytes.length];
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i + 1 < points.length; i++) {
        controller.enqueue(bytes.slice(points[i], points[i + 1]));
      }
      controller.close();
    },
  });
}

async function withDir<T>(work: (options: MultipartOptions) => Promise<T>): Promise<T> {
  const spoolDir = await Deno.makeTempDir();
  try {
    return await work({ spoolDir, maxBytes: 1 << 20, idleMs: 30_000, maxBodyPartBytes: 64 });
  } finally {
    await Deno.remove(spoolDir, { recursive: true });
  }
}

const BODY = form([
  { headers: 'Content-Disposition: form-data; name="other"', data: "ignored" },
  {
    headers: 'Content-Disposition: form-data; name="body"\r\nContent-Type: application/json',
    data: '{"table": {"columns": []}}',
  },
  {
    headers:
      'Content-Disposition: form-data; name="file"; filename="a \\"b\\".xlsx"\r\nContent-Type: application/octet-stream',
    data: FILE,
  },
], "preamble text\r\n");

Deno.test("spoolMultipart gives the same parts wherever the body is cut", async () => {
  await withDir(async (options) => {
    for (let cut = 0; cut <= BODY.length; cut++) {
      const upload = await spoolMultipart(stream(BODY, [cut]), TYPE, options);
      assert.deepEqual(await Deno.readFile(upload.file.path), FILE, `cut at ${cut}`);
      assert.equal(upload.file.bytes, FILE.length);
      assert.equal(upload.file.filename, 'a "b".xlsx');
      assert.equal(upload.body, '{"table": {"columns": []}}');
      await Deno.remove(upload.file.path);
    }
    const bytewise = await spoolMultipart(
      stream(BODY, Array.from({ length: BODY.length }, (_, i) => i)),
      TYPE,
      options,
    );
    assert.deepEqual(await Deno.readFile(bytewise.file.path), FILE);
  });
});

Deno.test("spoolMultipart refuses bad bodies and leaves no file behind", async () => {
  const cases: [string, Uint8Array, string, number][] = [
    ["not multipart", BODY, "application/json", 415],
    ["no boundary", BODY, "multipart/form-data", 400],
    [
      "no file part",
      form([{ headers: 'Content-Disposition: form-data; name="body"', data: "{}" }]),
      TYPE,
      400,
    ],
    ["no closing boundary", BODY.slice(0, BODY.length - 20), TYPE, 400],
    [
      "body part too large",
      form([{ headers: 'Content-Disposition: form-data; name="body"', data: "x".repeat(65) }]),
      TYPE,
      413,
    ],
    [
      "two file parts",
      form([
        { headers: 'Content-Disposition: form-data; name="file"', data: "a" },
        { headers: 'Content-Disposition: form-data; name="file"', data: "b" },
      ]),
      TYPE,
      400,
    ],
    [
      "a part without disposition",
      form([{ headers: "Content-Type: text/plain", data: "a" }]),
      TYPE,
      400,
    ],
  ];
  await withDir(async (options) => {
    for (const [what, bytes, type, status] of cases) {
      await assert.rejects(
        spoolMultipart(stream(bytes, [7]), type, options),
        (error: unknown) => error instanceof ApiError && error.status === status,
        what,
      );
      assert.deepEqual([...Deno.readDirSync(options.spoolDir)], [], what);
    }
    await assert.rejects(
      spoolMultipart(stream(BODY, [7]), TYPE, { ...options, maxBytes: BODY.length - 1 }),
      (error: unknown) => error instanceof ApiError && error.status === 413,
    );
    assert.deepEqual([...Deno.readDirSync(options.spoolDir)], []);
  });
});

Deno.test("spoolMultipart() says whether the file has a line of nothing but separators, however it is cut", async () => {
  const cases: [string, boolean][] = [
    ["a,b\n1,2\n", false],
    ["a,b\n1,\n,2", false],
    ["a,b\n1,2\n,\n3,4\n", true],
    ["a;b\r\n1;2\r\n ; \r\n", true],
    ["a,b\n\n1,2\n", true],
    ["a,b\n1,2\n,,", true],
    ["a|b\n|x\n", false],
  ];
  for (const [text, expected] of cases) {
    const body = form([{
      headers: 'Content-Disposition: form-data; name="file"; filename="t.csv"',
      data: text,
    }]);
    for (let cut = 0; cut < body.length; cut++) {
      await withDir(async (options) => {
        const upload = await spoolMultipart(stream(body, [cut]), TYPE, options);
        assert.equal(upload.file.separatorLines, expected, `${JSON.stringify(text)} cut at ${cut}`);
      });
    }
  }
});
