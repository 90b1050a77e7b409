// The write path's face: what the rest of the operator uses of internal/git. The process-wide
// manager and what it reports, a target's settings and folder report, the durable queue's log
// (which internal/redis implements), what a branch's observer hears (BranchObserver), the messages
// a status says of a worker's outage and contention, and the one remote probe the GitProvider's
// check makes. The rooms below (engine/, worker/, folder/, queue/) are reached through here from
// outside; the benchmark, which times their insides, is the exception (hack/layers.ts).
export { WorkerManager, defaultWorkerRoot, type TargetWriteState, type WorkerSpec } from "./workermanager.ts";
export type { SaveRoutes } from "./saveroutes.ts";
export type { AttachOutcome } from "./workerruns.ts";
export type { BranchState, Outage } from "./worker/report.ts";
export type { AppliedBranch, Applies, JudgedWrite, OverrideReport } from "./worker/applies.ts";
export { overrideNote } from "./folder/threeway.ts";
export type { QueueState } from "./queue/durable.ts";
export { LogFenced, type LogEntry, type WriteLog } from "./queue/writelog.ts";
export { outageFacts, outageMessage, type OutageFacts } from "./worker/outage.ts";
export { contentionFacts, contentionMessage, type ContentionFacts } from "./worker/contention.ts";
export type { TargetSettings } from "./folder/writes.ts";
export type { FolderReport } from "./folder/targetfolders.ts";
export { unwrittenMessage, type RefusedWrite } from "./folder/refusedwrites.ts";
export type { BranchObserver, QueueEvent } from "./worker/observer.ts";
export { probeRemote, type ProbeOutcome } from "./engine/probe.ts";
