import winston from "winston";

/** What every part of the operator logs through: winston in the process, a recorder in tests. */
export interface Logger {
  info(message: string, meta?: object): void;
  error(message: string, meta?: object): void;
}

export type LogFormat = "json" | "text";
export type LogLevel = "error" | "warn" | "info" | "debug";

/** JSON lines for machines (the default), or a readable line per entry for people. */
export function createLogger(level: LogLevel, format: LogFormat): Logger & winston.Logger {
  return winston.createLogger({
    level,
    format:
      format === "json"
        ? winston.format.combine(winston.format.timestamp(), winston.format.json())
        : winston.format.combine(winston.format.timestamp(), winston.format.simple()),
    transports: [new winston.transports.Console()],
  });
}
