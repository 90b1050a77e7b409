// Wires every controller and runnable into a manager. main.ts and the end-to-end tests both
// call this, so the tests run the operator as it ships.
import type { Manager } from "../internal/operator/manager.ts";
import { RuleStore } from "../internal/rulestore/store.ts";
import { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { BranchClaims } from "../internal/git/branchclaim.ts";
import { setupClusterWatchRuleController } from "./clusterwatchrule.ts";
import { setupGitBranchController } from "./gitbranch.ts";
import { setupGitProviderController } from "./gitprovider.ts";
import { setupGitTargetController } from "./gittarget.ts";
import { setupKubeProviderController } from "./kubeprovider.ts";
import { setupWatchRuleController } from "./watchrule.ts";

export interface OperatorSettings {
  inClusterKubeProviders: readonly string[];
  allowKubeconfigExec: boolean;
  allowKubeconfigInsecureTls: boolean;
  /** How often each source's discovery runs again; 30 s unless a test wants it sooner. */
  catalogRefreshMs?: number;
}

export interface Operator {
  rules: RuleStore;
  sourceContexts: SourceContexts;
  /** Which GitBranch holds each repository branch; the branch workers will read it too. */
  claims: BranchClaims;
}

export function setupOperator(manager: Manager, settings: OperatorSettings): Operator {
  const rules = new RuleStore();
  const sourceContexts = new SourceContexts(rules, manager.logger, settings.catalogRefreshMs);
  manager.addRunnable(sourceContexts);
  setupKubeProviderController(manager, {
    sourceContexts,
    inClusterKubeProviders: settings.inClusterKubeProviders,
    kubeconfig: {
      allowExec: settings.allowKubeconfigExec,
      allowInsecure: settings.allowKubeconfigInsecureTls,
    },
    recheckMs: settings.catalogRefreshMs,
  });
  const claims = new BranchClaims();
  setupGitProviderController(manager);
  setupGitBranchController(manager, { claims });
  setupGitTargetController(manager, sourceContexts);
  setupWatchRuleController(manager, rules, sourceContexts);
  setupClusterWatchRuleController(manager, rules, sourceContexts);
  return { rules, sourceContexts, claims };
}
