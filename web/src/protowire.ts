// Reading protobuf's binary wire format by hand, for the large answers the
// dashboard decodes without the generic decoder: flame graph trees
// (flame/wire.ts) and heatmaps (heatmap/wire.ts).

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

export const utf8 = new TextDecoder("utf-8", { fatal: false });
