import { networkInterfaces } from "node:os";

/**
 * The address kube-apiserver advertises as the `kubernetes` Service endpoint. It must be an
 * address of this host that is not loopback: the apiserver refuses to publish loopback as an
 * endpoint. We take the first non-internal IPv4 address (TESTENV_ADVERTISE_ADDRESS overrides
 * it). Nothing connects to it: every client in the tests dials 127.0.0.1.
 */
export function advertiseAddress(): string {
  const override = process.env.TESTENV_ADVERTISE_ADDRESS;
  if (override) return override;
  const candidates = Object.values(networkInterfaces())
    .flatMap((addresses) => addresses ?? [])
    .filter((a) => a.family === "IPv4" && !a.internal);
  const first = candidates[0];
  if (!first) {
    throw new Error(
      "kube-apiserver needs a non-loopback address to advertise and this host has none; " +
        "run `sudo hack/testenv/dummy-interface.sh` or set TESTENV_ADVERTISE_ADDRESS",
    );
  }
  return first.address;
}
