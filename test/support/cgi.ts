/** The head of a CGI response: what `git http-backend` prints before the body. */
export interface CgiHead {
  status: number;
  statusText: string;
  headers: [string, string][];
  /** Where the body starts in the buffer that was parsed. */
  bodyOffset: number;
}

/**
 * Parses the header block of a CGI response (RFC 3875 §6). Returns undefined while the
 * blank line that ends the headers has not arrived yet. A `Status:` header sets the HTTP
 * status and is not passed on; without one the status is 200.
 */
export function parseCgiHead(buffer: Buffer): CgiHead | undefined {
  const crlf = buffer.indexOf("\r\n\r\n");
  const lf = buffer.indexOf("\n\n");
  let end: number;
  let separatorLength: number;
  if (crlf !== -1 && (lf === -1 || crlf < lf)) {
    end = crlf;
    separatorLength = 4;
  } else if (lf !== -1) {
    end = lf;
    separatorLength = 2;
  } else {
    return undefined;
  }
  let status = 200;
  let statusText = "OK";
  const headers: [string, string][] = [];
  for (const line of buffer.subarray(0, end).toString("latin1").split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") {
      const match = /^(\d{3})\s*(.*)$/.exec(value);
      if (!match) throw new Error(`malformed CGI Status header: ${value}`);
      status = Number(match[1]);
      statusText = match[2] ?? "";
    } else {
      headers.push([name, value]);
    }
  }
  return { status, statusText, headers, bodyOffset: end + separatorLength };
}

/** Reads the user and password of an HTTP Basic Authorization header. */
export function parseBasicAuth(
  header: string | undefined,
): { username: string; password: string } | undefined {
  const match = header ? /^Basic\s+(\S+)$/i.exec(header) : null;
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** Which Git service a smart-HTTP request asks for, from its path or its `service=` query. */
export function gitServiceOf(
  pathname: string,
  query: URLSearchParams,
): "upload-pack" | "receive-pack" | undefined {
  const service = query.get("service") ?? pathname.split("/").pop() ?? "";
  if (service === "git-upload-pack") return "upload-pack";
  if (service === "git-receive-pack") return "receive-pack";
  return undefined;
}
