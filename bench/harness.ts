// What every phase of the benchmark is given: the control plane, the Git server and its user,
// where operators keep their clones, the knobs, and where a process logs. Its own file, below
// the phases that take it and size.ts that runs them, so no phase imports size.ts back.
import type { KubeConfig } from "@kubernetes/client-node";
import type { GitServer } from "../test/support/gitserver.ts";
import type { BenchConfig } from "./config.ts";

export interface Harness {
  kc: KubeConfig;
  git: GitServer;
  user: { username: string; password: string };
  workerRoot: string;
  config: BenchConfig;
  /** The control plane's admin kubeconfig, and where an operator process writes its log. */
  kubeconfigPath: string;
  logDir: string;
}
