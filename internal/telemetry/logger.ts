// One logger for the whole process, so --log-level and --log-format decide every line: error for
// what failed, warn for what is degraded but still works, info for what an operator person
// follows (start, stop, leadership, a request finished), debug for the hot paths (each watch
// event routed, each write a branch worker accepts, each commit window decision, each audit fact).
import winston from "winston";
import type { Writable } from "node:stream";

/** What every part of the operator logs through: winston in the process, a recorder in tests. */
export interface Logger {
  error(message: string, meta?: object): void;
  warn(message: string, meta?: object): void;
  info(message: string, meta?: object): void;
  debug(message: string, meta?: object): void;
}

export type LogFormat = "json" | "text";
export type LogLevel = "error" | "warn" | "info" | "debug";

/**
 * JSON lines for machines (the default), or a readable line per entry for people, on stdout;
 * `stream` writes them elsewhere instead (a test reads what a level lets through).
 */
export function createLogger(level: LogLevel, format: LogFormat, stream?: Writable): Logger & winston.Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(
      enabledAt(level),
      winston.format.timestamp(),
      format === "json" ? winston.format.json() : winston.format.simple(),
    ),
    transports: [stream ? new winston.transports.Stream({ stream }) : new winston.transports.Console()],
  });
}

/**
 * Drops a line below `level` before it is formatted: winston formats every line and leaves the
 * level to the transport, so a debug line on a hot path would be stringified to be thrown away.
 */
function enabledAt(level: LogLevel) {
  const { levels } = winston.config.npm;
  return winston.format((info) => (levels[info.level]! <= levels[level] ? info : false))();
}

/** A logger whose every line carries `fields`, as winston's child loggers do. */
export function withFields(logger: Logger, fields: object): Logger {
  const merged = (meta?: object) => ({ ...fields, ...meta });
  return {
    error: (message, meta) => logger.error(message, merged(meta)),
    warn: (message, meta) => logger.warn(message, merged(meta)),
    info: (message, meta) => logger.info(message, merged(meta)),
    debug: (message, meta) => logger.debug(message, merged(meta)),
  };
}
