import type { GitTargetEventStream, ObjectItem } from "../../internal/stream/stream.ts";
import type { ResourceIdentity } from "../../internal/types/identity.ts";

/**
 * The next item about objects, past the markers of a replay starting or a collection removed,
 * or a failure naming what was awaited once the deadline passes. Each item read is taken, as the
 * branch worker takes it: the stored resume cursor goes no further than what was taken.
 */
export async function nextItem(
  stream: GitTargetEventStream,
  what: string,
  timeoutMs = 20_000,
): Promise<ObjectItem> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs}ms waiting for ${what}`)),
      timeoutMs,
    );
  });
  try {
    for (;;) {
      const result = await Promise.race([stream.next(), timeout]);
      if (result.done) throw new Error(`the stream ended while waiting for ${what}`);
      stream.taken(result.value);
      if (result.value.type !== "replaying" && result.value.type !== "removed") return result.value;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** A ConfigMap's identity, its uid its name: what stream items in unit tests and the benchmark name. */
export const configMapIdentity = (name: string, namespace = "apps"): ResourceIdentity => ({
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespace,
  name,
  uid: name,
});
