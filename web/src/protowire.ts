// Protobuf's binary wire format by hand: reading the large answers the
// dashboard decodes without the generic decoder (flame graph trees in
// flame/wire.ts, heatmaps in heatmap/wire.ts), and writing the requests a
// profile page makes first (requests.ts), so that neither waits for the
// generated code and protobuf-es's runtime (src/rpc.ts, loaded later).

/** countVarints counts the varints in buf[s:e]: each ends at a byte under
 * 0x80 (to size a packed field's array before decoding it). */
export function countVarints(buf: Uint8Array, s: number, e: number): number {
  let n = 0;
  for (let i = s; i < e; i++) n += (buf[i] >>> 7) ^ 1;
  return n;
}

export class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  varint(): number {
    const b = this.buf;
    let x = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error("protobuf: truncated varint");
      const c = b[this.pos++];
      x += (c & 0x7f) * mul;
      if (c < 0x80) return x;
      mul *= 128;
    }
    throw new Error("protobuf: varint too long");
  }

  /** int64 reads a varint as a signed 64-bit integer (two's complement:
   * a negative one takes ten bytes), exact up to 2^53 in magnitude. */
  int64(): number {
    const start = this.pos;
    const x = this.varint();
    if (this.pos - start < 10) return x;
    let v = 0n;
    for (let i = this.pos - 1; i >= start; i--) v = (v << 7n) | BigInt(this.buf[i] & 0x7f);
    return Number(BigInt.asIntN(64, v));
  }

  /** string reads a length-delimited field as UTF-8. */
  string(): string {
    const [a, b] = this.bytes();
    return utf8.decode(this.buf.subarray(a, b));
  }

  bytes(): [number, number] {
    const n = this.varint();
    const s = this.pos;
    if (s + n > this.end) throw new Error("protobuf: truncated field");
    this.pos += n;
    return [s, s + n];
  }

  skip(wire: number) {
    switch (wire) {
      case 0:
        this.varint();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.bytes();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        throw new Error(`protobuf: wire type ${wire}`);
    }
    if (this.pos > this.end) throw new Error("protobuf: truncated field");
  }
}

/** utf8 reads protobuf strings (invalid bytes become U+FFFD). */
export const utf8 = new TextDecoder("utf-8", { fatal: false });

/** Writer writes protobuf's binary wire format, fields in the order they
 * are written; a field with its default value is left out (proto3 implicit
 * presence) unless the caller writes it on purpose. */
export class Writer {
  private out: number[] = [];

  private varint(n: number) {
    while (n > 127) {
      this.out.push((n % 128) | 128);
      n = Math.floor(n / 128);
    }
    this.out.push(n);
  }

  private tag(field: number, wire: number) {
    this.varint(field * 8 + wire);
  }

  /** int writes an int32/int64/enum value (a negative one takes ten bytes,
   * two's complement) even when it is zero. */
  int(field: number, v: number | bigint) {
    this.tag(field, 0);
    this.int64Value(v);
  }

  private int64Value(v: number | bigint) {
    if (typeof v === "number" && v >= 0 && Number.isSafeInteger(v)) return this.varint(v);
    let u = BigInt.asUintN(64, BigInt(v));
    while (u > 127n) {
      this.out.push(Number(u & 127n) | 128);
      u >>= 7n;
    }
    this.out.push(Number(u));
  }

  /** intIfSet writes an integer unless it is zero. */
  intIfSet(field: number, v: number | bigint | undefined) {
    if (v !== undefined && v != 0) this.int(field, v);
  }

  bool(field: number, v: boolean | undefined) {
    if (v) this.int(field, 1);
  }

  string(field: number, s: string | undefined) {
    if (!s) return;
    const b = utf8Encoder.encode(s);
    this.tag(field, 2);
    this.varint(b.length);
    for (let i = 0; i < b.length; i++) this.out.push(b[i]);
  }

  /** strings writes a repeated string field: each element, empty ones too. */
  strings(field: number, ss: readonly string[] | undefined) {
    for (const x of ss ?? []) {
      const b = utf8Encoder.encode(x);
      this.tag(field, 2);
      this.varint(b.length);
      for (let i = 0; i < b.length; i++) this.out.push(b[i]);
    }
  }

  /** packed writes a repeated integer field (packed, as proto3 does) unless it is empty. */
  packed(field: number, vs: readonly number[] | undefined) {
    if (!vs?.length) return;
    const w = new Writer();
    for (const v of vs) w.int64Value(v);
    this.bytesField(field, w.out);
  }

  /** message writes a nested message (present, even if empty). */
  message(field: number, write: (w: Writer) => void) {
    const w = new Writer();
    write(w);
    this.bytesField(field, w.out);
  }

  private bytesField(field: number, b: number[]) {
    this.tag(field, 2);
    this.varint(b.length);
    for (const x of b) this.out.push(x);
  }

  finish(): Uint8Array {
    return new Uint8Array(this.out);
  }
}

const utf8Encoder = new TextEncoder();
