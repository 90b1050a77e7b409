import type { CompiledRule, TargetRef } from "./compile.ts";
import { keyOf as targetKey } from "../types/names.ts";

/**
 * The compiled rules, by the rule object they came from. Read by the watch plane to plan each
 * GitTarget's collections; replacing a rule object's entry replaces all of its items at once.
 */
export class RuleStore {
  private readonly byOrigin = new Map<string, CompiledRule[]>();
  private readonly listeners: ((targets: TargetRef[]) => void)[] = [];

  /** Replaces what one rule object compiled to, and tells listeners which targets changed. */
  set(origin: string, rules: CompiledRule[]): void {
    const before = this.byOrigin.get(origin) ?? [];
    if (rules.length === 0) this.byOrigin.delete(origin);
    else this.byOrigin.set(origin, rules);
    this.notify([...before, ...rules].map((r) => r.target));
  }

  delete(origin: string): void {
    this.set(origin, []);
  }

  rulesFor(target: TargetRef): CompiledRule[] {
    const key = targetKey(target);
    return [...this.byOrigin.values()].flat().filter((r) => targetKey(r.target) === key);
  }

  /** Every target some rule names. */
  targets(): TargetRef[] {
    const unique = new Map<string, TargetRef>();
    for (const rule of [...this.byOrigin.values()].flat()) unique.set(targetKey(rule.target), rule.target);
    return [...unique.values()];
  }

  onChange(listener: (targets: TargetRef[]) => void): void {
    this.listeners.push(listener);
  }

  private notify(targets: TargetRef[]): void {
    const unique = new Map(targets.map((t) => [targetKey(t), t]));
    if (unique.size === 0) return;
    for (const listener of this.listeners) listener([...unique.values()]);
  }
}
