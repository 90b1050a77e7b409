// Which apply operations this process's dispatcher follows, by request token. The FluxClaim
// reconciler leaves an operation in flight alone only while it is followed here, or for a
// minute after it first saw it unfollowed (applier-claims.md, "An operation nobody follows"):
// an operation a stopped process left behind is then suspended and ended, so a resumed
// Kustomization is never left with nothing watching it, and the claim takes the next one.
export class Following {
  private readonly tokens = new Set<string>();

  follow(token: string): void {
    this.tokens.add(token);
  }

  done(token: string): void {
    this.tokens.delete(token);
  }

  has(token: string | undefined): boolean {
    return token !== undefined && this.tokens.has(token);
  }
}

/** How long an operation nobody follows is left alone before the claim ends it. */
export const unfollowedGraceMs = 60_000;
