// The SSH wire encoding (RFC 4251 § 5) that OpenSSH keys and signatures are written in.

/** A uint32, big-endian. */
export function uint32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** A string: its length, then its bytes. */
export function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === "string" ? Buffer.from(value, "utf8") : value;
  return Buffer.concat([uint32(bytes.length), bytes]);
}

/** An mpint from an unsigned big-endian magnitude: a zero byte in front when its high bit is set. */
export function mpint(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length && magnitude[start] === 0) start++;
  const trimmed = magnitude.subarray(start);
  const bytes =
    trimmed.length > 0 && trimmed[0]! & 0x80 ? Buffer.concat([Buffer.alloc(1), trimmed]) : trimmed;
  return sshString(bytes);
}

/** Reads the wire encoding in order; throws on a value that runs past the end. */
export class WireReader {
  private at = 0;

  constructor(private readonly bytes: Buffer) {}

  get remaining(): number {
    return this.bytes.length - this.at;
  }

  uint32(): number {
    if (this.remaining < 4) throw new Error("the key ends early");
    const value = this.bytes.readUInt32BE(this.at);
    this.at += 4;
    return value;
  }

  bytesOf(length: number): Buffer {
    if (this.remaining < length) throw new Error("the key ends early");
    const value = this.bytes.subarray(this.at, this.at + length);
    this.at += length;
    return value;
  }

  string(): Buffer {
    return this.bytesOf(this.uint32());
  }

  text(): string {
    return this.string().toString("utf8");
  }

  /** An mpint's unsigned magnitude, with no leading zero bytes. */
  mpint(): Buffer {
    const bytes = this.string();
    let start = 0;
    while (start < bytes.length - 1 && bytes[start] === 0) start++;
    return bytes.subarray(start);
  }
}

/** Base64 wrapped at 70 columns between BEGIN and END lines, as OpenSSH armors keys and signatures. */
export function armor(label: string, bytes: Buffer): string {
  const body = bytes.toString("base64").match(/.{1,70}/g) ?? [];
  return `-----BEGIN ${label}-----\n${body.join("\n")}\n-----END ${label}-----\n`;
}

/** The bytes between an armor's BEGIN and END lines, or undefined when `text` has none. */
export function dearmor(label: string, text: string): Buffer | undefined {
  const match = new RegExp(`-----BEGIN ${label}-----([\\s\\S]*?)-----END ${label}-----`).exec(text);
  return match ? Buffer.from(match[1]!.replace(/\s+/g, ""), "base64") : undefined;
}
