// The real sops and age CLIs, reading back what the operator encrypts: age-keygen makes the
// identities, and sops decrypts a SOPS document with them, verifying its MAC.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { parse } from "yaml";
import { sopsBinary } from "./binaries.ts";

const run = promisify(execFile);

export interface AgeIdentity {
  /** The identity file, as SOPS_AGE_KEY_FILE names it. */
  file: string;
  /** Its public key: an age recipient. */
  recipient: string;
}

/** A fresh age identity in `dir`, from age-keygen. */
export async function ageIdentity(dir: string, name: string): Promise<AgeIdentity> {
  const file = join(dir, `${name}.txt`);
  await run("age-keygen", ["-o", file]);
  const { stdout } = await run("age-keygen", ["-y", file]);
  return { file, recipient: stdout.trim() };
}

/** `sops -d` of a SOPS document's text with an identity, as sops prints it; throws as sops fails. */
export async function sopsDecryptText(dir: string, text: string, identity: AgeIdentity): Promise<string> {
  const file = join(dir, `in-${process.hrtime.bigint()}.sops.yaml`);
  writeFileSync(file, text);
  const { stdout } = await run(sopsBinary(), ["--disable-version-check", "--decrypt", file], {
    env: { ...process.env, SOPS_AGE_KEY_FILE: identity.file },
  });
  return stdout;
}

/** `sops -d` of a SOPS document's text with an identity, parsed. */
export async function sopsDecrypt(dir: string, text: string, identity: AgeIdentity): Promise<unknown> {
  return parse(await sopsDecryptText(dir, text, identity));
}
