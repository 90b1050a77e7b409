// Loggers for tests: one that drops everything, and one that keeps every line with its level
// and fields, for a test that checks what is logged (or never is).
import type { Logger } from "../../internal/telemetry/logger.ts";

const drop = () => undefined;

export const quiet: Logger = { error: drop, warn: drop, info: drop, debug: drop };

export type Level = keyof Logger;

export interface LogLine {
  level: Level;
  message: string;
  meta: Record<string, unknown>;
}

/** A logger that keeps every line in `lines`. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: Level) =>
    (message: string, meta?: object): void =>
      void lines.push({ level, message, meta: { ...(meta as Record<string, unknown>) } });
  return { lines, error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") };
}
