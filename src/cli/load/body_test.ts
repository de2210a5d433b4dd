import assert from "node:assert/strict";
import { bodyStream, type Framing, jsonFraming, multipartFraming } from "./body.ts";
import { LoadError } from "./error.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** Everything a body stream produces. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A temp file holding `bytes`, open for reading. */
async function openWith(dir: string, name: string, bytes: Uint8Array): Promise<Deno.FsFile> {
  await Deno.writeFile(`${dir}/${name}`, bytes);
  return await Deno.open(`${dir}/${name}`);
}

Deno.test("multipartFraming() with bodyStream() gives well-formed multipart of the announced length", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Content that looks like framing must come through untouched.
    const content = encoder.encode('a,b\r\n--not-the-boundary\r\n1,"x\r\ny"\r\n'.repeat(5000));
    const file = await openWith(dir, "data.csv", content);
    const definition = '{"table":{"columns":[{"name":"a","type":"integer"}]}}';
    const framing = multipartFraming("----b0und4ry", "Zahlen – März.csv", "text/csv", definition);
    const announced = framing.head.length + content.length + framing.tail.length;
    const bytes = await drain(bodyStream(file, content.length, framing));
    assert.equal(bytes.length, announced);

    const form = await new Request("http://x/", {
      method: "POST",
      body: bytes as Uint8Array<ArrayBuffer>,
      headers: { "content-type": framing.contentType },
    }).formData();
    const part = form.get("file") as File;
    assert.equal(part.name, "Zahlen – März.csv");
    assert.equal(part.type, "text/csv");
    assert.deepEqual(new Uint8Array(await part.arrayBuffer()), content);
    assert.equal(form.get("body"), definition);

    const bare = multipartFraming("B", 'we"ird\r\n.csv', "text/csv");
    assert.match(decoder.decode(bare.head), /filename="we%22ird%0D%0A\.csv"\r\n/);
    assert.doesNotMatch(decoder.decode(bare.head), /name="body"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("jsonFraming() wraps a top-level array as the envelope and sends an envelope as it is", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases: [string, string, string | undefined, unknown][] = [
      ["array", ' \n[{"id": 1}, {"id": 2}]\n', undefined, { data: [{ id: 1 }, { id: 2 }] }],
      [
        "array with a byte order mark and a definition",
        '\uFEFF[[1, "a"]]',
        '{"columns":[{"name":"id","type":"integer"},{"name":"n","type":"text"}]}',
        {
          table: { columns: [{ name: "id", type: "integer" }, { name: "n", type: "text" }] },
          data: [[1, "a"]],
        },
      ],
      ["envelope", '{"data": [{"id": 1}]}', undefined, { data: [{ id: 1 }] }],
    ];
    for (const [name, text, definition, expected] of cases) {
      const bytes = encoder.encode(text);
      const framing = jsonFraming(bytes, definition);
      const file = await openWith(dir, "rows.json", bytes);
      await file.seek(framing.skip, Deno.SeekMode.Start);
      const fileBytes = bytes.length - framing.skip;
      const body = await drain(bodyStream(file, fileBytes, framing));
      assert.equal(body.length, framing.head.length + fileBytes + framing.tail.length, name);
      assert.deepEqual(JSON.parse(decoder.decode(body)), expected, name);
    }
    assert.throws(
      () => jsonFraming(encoder.encode('{"data": []}'), "{}"),
      (error) => error instanceof LoadError && /envelope/.test(error.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bodyStream() fails when the file does not match the announced length", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const none: Framing = {
      contentType: "x",
      head: new Uint8Array(0),
      tail: new Uint8Array(0),
      skip: 0,
    };
    const grown = await openWith(dir, "a", new Uint8Array(100));
    await assert.rejects(drain(bodyStream(grown, 50, none)), /grew/);
    const shrunk = await openWith(dir, "b", new Uint8Array(10));
    await assert.rejects(drain(bodyStream(shrunk, 50, none)), /shrank/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
