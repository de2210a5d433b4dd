/**
 * Byte codes, text codecs and byte buffers for the JSON rows pass.
 *
 * @module
 */

/** Byte code of `"`. */
export const QUOTE = 0x22;
/** Byte code of `\`. */
export const BACKSLASH = 0x5c;
/** Byte code of `{`. */
export const LBRACE = 0x7b;
/** Byte code of `}`. */
export const RBRACE = 0x7d;
/** Byte code of `[`. */
export const LBRACKET = 0x5b;
/** Byte code of `]`. */
export const RBRACKET = 0x5d;
/** Byte code of `,`. */
export const COMMA = 0x2c;
/** Byte code of `:`. */
export const COLON = 0x3a;
/** Byte code of a space. */
export const SPACE = 0x20;
/** Byte code of a tab. */
export const TAB = 0x09;
/** Byte code of a line feed. */
export const LF = 0x0a;
/** Byte code of a carriage return. */
export const CR = 0x0d;

/** Decodes row keys; never throws. */
export const DECODER = new TextDecoder("utf-8", { fatal: false });
/** For envelope members, where bytes that are not UTF-8 make the body malformed. */
export const STRICT_DECODER = new TextDecoder("utf-8", { fatal: true });
/** Encodes the bytes the pass adds to its copy. */
export const ENCODER = new TextEncoder();
/** Opens a positional row rewritten as an object. */
export const OPEN_OBJECT = ENCODER.encode("{");
/** Closes a positional row rewritten as an object. */
export const CLOSE_OBJECT = ENCODER.encode("}");

/** The parts joined into one new buffer. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
