// A decided write's commit message, from its GitTarget's templates (or the defaults) and what
// the write changed. A template that fails never costs the commit: the default is used, and the
// failure is logged.
import { commitMessage, type MessageTemplates } from "../../commitmessage/messages.ts";
import { messageData } from "../../commitmessage/model.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { Signature } from "../../types/signature.ts";
import type { AppliedChange } from "./materialize.ts";
import type { DecidedWrite } from "./writes.ts";
import { parseKey } from "../../types/names.ts";

export type { MessageTemplates };

export function commitMessageFor(author: Signature, logger: Logger) {
  return (write: DecidedWrite, applied: AppliedChange[]): string => {
    const { namespace, name } = parseKey(write.target.key);
    const result = commitMessage(
      write.target.templates,
      messageData({
        target: { namespace, name, path: write.target.path },
        author,
        // A request's own words are framed by requestTemplate; without them it commits as live.
        reason: write.save?.message !== undefined ? "request" : write.reason,
        ...(write.save?.message !== undefined ? { requestMessage: write.save.message } : {}),
        changes: applied.map((a) => ({ operation: a.operation, ...a.identity, path: a.path })),
      }),
    );
    if (result.fallback) {
      logger.warn("a commit message template failed; the default was used", {
        gitTarget: write.target.key,
        template: result.fallback.template,
        reason: result.fallback.reason,
      });
    }
    return result.message;
  };
}
