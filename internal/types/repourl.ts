// Repository URLs as keys. Two GitProviders may spell one repository differently (a trailing
// .git, an upper-case host, a user name, the scp-like SSH form), and the branch claim must see
// one repository branch, or two branch workers would write it. Pure: nothing here resolves a
// host name or asks a server.

const defaultPorts: Record<string, string> = { http: "80", https: "443", ssh: "22" };

/** scheme://[userinfo@]host[:port][/path], the host possibly an [IPv6] literal. */
const schemeForm = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^/:]*)(?::(\d*))?(\/.*)?$/;
/** git's scp-like [user@]host:path, which it reads whenever a colon comes before any slash. */
const scpForm = /^(?:[^@/]*@)?(\[[^\]]*\]|[^/:]+):(.*)$/;

/**
 * The repository `url` names, as one key for every spelling of it: `host[:port]/path`, with a
 * lower-case host, no scheme (the https and SSH URLs of one repository are one repository, and
 * two branch workers must not write it), no user info (a user name does not change the
 * repository, and a password must never become part of a key that is published in status), no
 * port that is its scheme's default, no trailing slash or `.git`. The scp-like
 * `git@host:org/repo` is `host/org/repo`. The path keeps its case, since most servers read it
 * case-sensitively. A string that is no URL comes back trimmed and redacted.
 */
export function normalizeRepositoryUrl(url: string): string {
  const trimmed = url.trim();
  const parsed = parse(trimmed);
  if (!parsed) {
    const redacted = redactUrl(trimmed);
    return redacted === trimmed ? trimmed : normalizeRepositoryUrl(redacted);
  }
  const scheme = parsed.scheme.toLowerCase();
  const host = parsed.host.toLowerCase();
  const port = parsed.port && parsed.port !== defaultPorts[scheme] ? `:${parsed.port}` : "";
  return `${host}${port}${normalizePath(parsed.path)}`;
}

/**
 * The URL without its user info, for messages: an http(s) URL may carry a password there. A
 * password written with a raw "/" in it breaks the URL's shape, so when anything before the
 * last "@" holds a ":", everything up to that "@" goes: a message may lose part of an odd URL,
 * but never shows a password.
 */
export function redactUrl(url: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url)?.[0];
  if (!scheme) return url;
  const rest = url.slice(scheme.length);
  const at = rest.lastIndexOf("@");
  if (at >= 0 && rest.slice(0, at).includes(":")) return scheme + rest.slice(at + 1);
  return scheme + rest.replace(/^[^@/]*@/, "");
}

interface ParsedUrl {
  scheme: string;
  host: string;
  port: string | undefined;
  path: string;
}

function parse(url: string): ParsedUrl | undefined {
  const scheme = schemeForm.exec(url);
  if (scheme) {
    return { scheme: scheme[1]!, host: scheme[2]!, port: scheme[3] || undefined, path: scheme[4] ?? "" };
  }
  if (url.includes("://")) return undefined;
  const scp = scpForm.exec(url);
  if (scp) return { scheme: "ssh", host: scp[1]!, port: undefined, path: `/${scp[2]!.replace(/^\/+/, "")}` };
  return undefined;
}

function normalizePath(path: string): string {
  const trimmed = path
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .replace(/\/+$/, "");
  return trimmed === "" ? "" : trimmed.startsWith("/") ? trimmed : `/${trimmed}`;
}
