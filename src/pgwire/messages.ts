/**
 * The PostgreSQL protocol's framing (version 3.0): the untyped start-up packets, then typed
 * messages (one byte, a 32-bit length counting itself, the body), read from a byte stream as
 * they complete; and the backend's messages written.
 *
 * @module
 */

/** The codes a start-up packet carries in place of a protocol version. */
export const SSL_REQUEST = 80877103;
export const GSSENC_REQUEST = 80877104;
export const CANCEL_REQUEST = 80877102;

/** A message as read: its type byte (0 for a start-up packet) and its body. */
export interface Message {
  readonly type: number;
  readonly body: Uint8Array;
}

/** A message longer than the bound: the connection is closed after saying so (08P01). */
export class MessageTooLarge extends Error {
  constructor(readonly length: number, readonly limit: number) {
    super(`A message of ${length} bytes is longer than the ${limit} allowed`);
  }
}

/**
 * Messages cut out of the bytes given to {@link push}, in order; untyped (start-up) until
 * {@link started} is set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MessageReader } from "./messages.ts";
 *
 * const reader = new MessageReader(1024);
 * reader.started = true;
 * reader.push(new Uint8Array([81, 0, 0, 0, 6, 49]));
 * assert.equal(reader.next(), undefined);
 * reader.push(new Uint8Array([0]));
 * assert.deepEqual(reader.next(), { type: 81, body: new Uint8Array([49, 0]) });
 * ```
 */
export class MessageReader {
  /** Whether the start-up packet is behind: messages have a type byte from then on. */
  started = false;
  #buffer: Uint8Array = new Uint8Array(0);
  #offset = 0;

  constructor(private readonly limit: number) {}

  push(bytes: Uint8Array): void {
    const left = this.#buffer.subarray(this.#offset);
    if (left.length === 0) {
      this.#buffer = bytes;
    } else {
      const joined = new Uint8Array(left.length + bytes.length);
      joined.set(left);
      joined.set(bytes, left.length);
      this.#buffer = joined;
    }
    this.#offset = 0;
  }

  /** The next whole message, or undefined until more bytes come. */
  next(): Message | undefined {
    const head = this.started ? 5 : 4;
    const left = this.#buffer.length - this.#offset;
    if (left < head) return undefined;
    const view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset + this.#offset);
    const type = this.started ? this.#buffer[this.#offset]! : 0;
    const length = view.getInt32(this.started ? 1 : 0);
    if (length < 4 || length > this.limit) throw new MessageTooLarge(length, this.limit);
    const whole = (this.started ? 1 : 0) + length;
    if (left < whole) return undefined;
    const body = this.#buffer.subarray(this.#offset + head, this.#offset + whole);
    this.#offset += whole;
    return { type, body };
  }
}

/** Reads a message body's fields in order. */
export class BodyReader {
  #at = 0;
  readonly #view: DataView;
  static readonly #decoder = new TextDecoder();

  constructor(private readonly body: Uint8Array) {
    this.#view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  }

  get left(): number {
    return this.body.length - this.#at;
  }

  int16(): number {
    const value = this.#view.getInt16(this.#at);
    this.#at += 2;
    return value;
  }

  int32(): number {
    const value = this.#view.getInt32(this.#at);
    this.#at += 4;
    return value;
  }

  byte(): number {
    return this.body[this.#at++]!;
  }

  /** A NUL-terminated string. */
  cstring(): string {
    const end = this.body.indexOf(0, this.#at);
    if (end < 0) throw new RangeError("A string has no end");
    const text = BodyReader.#decoder.decode(this.body.subarray(this.#at, end));
    this.#at = end + 1;
    return text;
  }

  bytes(length: number): Uint8Array {
    if (length > this.left) throw new RangeError("A value runs past its message");
    const bytes = this.body.subarray(this.#at, this.#at + length);
    this.#at += length;
    return bytes;
  }
}

const encoder = new TextEncoder();

/**
 * Backend messages built into one buffer, sent together by {@link take}: a result's rows go
 * out in large writes rather than one per row.
 */
export class MessageWriter {
  #buffer = new Uint8Array(16 * 1024);
  #length = 0;
  #view = new DataView(this.#buffer.buffer);
  /** Where the message being built began. */
  #start = -1;

  get length(): number {
    return this.#length;
  }

  #room(bytes: number): void {
    if (this.#length + bytes <= this.#buffer.length) return;
    let size = this.#buffer.length * 2;
    while (size < this.#length + bytes) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#buffer.subarray(0, this.#length));
    this.#buffer = grown;
    this.#view = new DataView(grown.buffer);
  }

  /** Begins a message of `type` (a character). */
  begin(type: string): this {
    this.#room(5);
    this.#buffer[this.#length] = type.charCodeAt(0);
    this.#start = this.#length + 1;
    this.#length += 5;
    return this;
  }

  /** Ends the message begun last, writing its length. */
  end(): this {
    this.#view.setInt32(this.#start, this.#length - this.#start);
    this.#start = -1;
    return this;
  }

  byte(value: number): this {
    this.#room(1);
    this.#buffer[this.#length++] = value;
    return this;
  }

  int16(value: number): this {
    this.#room(2);
    this.#view.setInt16(this.#length, value);
    this.#length += 2;
    return this;
  }

  int32(value: number): this {
    this.#room(4);
    this.#view.setInt32(this.#length, value);
    this.#length += 4;
    return this;
  }

  bytes(value: Uint8Array): this {
    this.#room(value.length);
    this.#buffer.set(value, this.#length);
    this.#length += value.length;
    return this;
  }

  /** A string and its NUL. */
  cstring(value: string): this {
    return this.bytes(encoder.encode(value)).byte(0);
  }

  /** A value as a 32-bit length and its bytes; -1 for NULL. */
  value(value: Uint8Array | null): this {
    if (value === null) return this.int32(-1);
    return this.int32(value.length).bytes(value);
  }

  /** A text value, UTF-8, as {@link value} writes it. */
  text(value: string | null): this {
    if (value === null) return this.int32(-1);
    this.#room(4 + value.length * 3);
    const { written } = encoder.encodeInto(
      value,
      this.#buffer.subarray(this.#length + 4),
    );
    this.#view.setInt32(this.#length, written);
    this.#length += 4 + written;
    return this;
  }

  /** The bytes written so far, the writer emptied. */
  take(): Uint8Array {
    const bytes = this.#buffer.slice(0, this.#length);
    this.#length = 0;
    return bytes;
  }
}
