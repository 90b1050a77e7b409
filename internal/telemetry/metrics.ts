import { Gauge, Registry, collectDefaultMetrics } from "prom-client";

/** Every metric the operator exports starts with this, so one selector finds them all. */
export const metricPrefix = "gitopsreverser_";

/** The process's metric registry, with Node's runtime metrics under our prefix. */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: metricPrefix });
  return registry;
}

/** 1 while this process holds the leader election lease (or runs without election), else 0. */
export function leaderGauge(registry: Registry, isLeader: () => boolean): Gauge {
  return new Gauge({
    name: `${metricPrefix}leader`,
    help: "1 while this process is the leader and runs the watch plane and the branch workers.",
    registers: [registry],
    collect() {
      this.set(isLeader() ? 1 : 0);
    },
  });
}
