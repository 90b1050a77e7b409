// One value of a SOPS document: AES-256-GCM under the document's data key, with a 32-byte
// nonce and the value's path as additional data, written as
// ENC[AES256_GCM,data:…,iv:…,tag:…,type:…], as sops writes and reads it.
import { createCipheriv, randomBytes } from "node:crypto";

/** A leaf sops encrypts and covers with its MAC. */
export type Leaf = string | number | boolean;

const nonceBytes = 32;
const tagBytes = 16;

/**
 * Encrypts `value` under `key` with `additionalData`: the value's key path joined by ":" with a
 * final ":", or the lastmodified stamp for the MAC. An empty string stays empty, as in sops.
 */
export function encryptValue(value: Leaf, key: Uint8Array, additionalData: string): string {
  if (value === "") return "";
  const { type, text } = typed(value);
  const iv = randomBytes(nonceBytes);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: tagBytes });
  cipher.setAAD(Buffer.from(additionalData, "utf8"));
  const data = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  return `ENC[AES256_GCM,data:${data.toString("base64")},iv:${iv.toString("base64")},tag:${tag.toString("base64")},type:${type}]`;
}

/** The bytes sops feeds its MAC for a leaf: its text as the type sops reads it as. */
export function macBytes(value: Leaf): Buffer {
  return Buffer.from(typed(value).text, "utf8");
}

/**
 * A leaf's sops type and text. Go formats an int with strconv.Itoa, a float with
 * FormatFloat('f', -1) (never an exponent), and a bool title-cased.
 */
function typed(value: Leaf): { type: "str" | "int" | "float" | "bool"; text: string } {
  if (typeof value === "string") return { type: "str", text: value };
  if (typeof value === "boolean") return { type: "bool", text: value ? "True" : "False" };
  if (!Number.isFinite(value)) throw new Error("sops cannot encrypt a number that is not finite");
  // YAML writes an integer past 2^53 with an exponent, which Go reads as a float.
  if (Number.isSafeInteger(value)) return { type: "int", text: String(value) };
  return { type: "float", text: fixedNotation(value) };
}

// JavaScript writes 1e-7 and 1.5e+21 with an exponent, where Go's 'f' format spells the digits out.
function fixedNotation(value: number): string {
  const text = String(value);
  if (!/e/i.test(text)) return text;
  const [mantissa = "", exponentText = "0"] = text.toLowerCase().split("e");
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith("-");
  const [whole = "", fraction = ""] = mantissa.replace("-", "").split(".");
  const digits = whole + fraction;
  const point = whole.length + exponent;
  const spelled =
    point <= 0
      ? `0.${"0".repeat(-point)}${digits}`
      : point >= digits.length
        ? digits + "0".repeat(point - digits.length)
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return (negative ? "-" : "") + spelled;
}
