// The bounds on a template and on its render: a template comes from a GitTarget spec, so any
// namespace owner's text runs inside the operator, and these keep it from stalling the branch worker.

/** The longest template accepted; the GitTarget CRD enforces the same maxLength. */
export const maxTemplateLength = 4096;
/** The most a render may produce, in UTF-8 bytes, and the most any one value may hold. */
export const maxOutputBytes = 64 * 1024;
/** The most nodes, iterations, calls and printed elements a render may take. */
export const maxSteps = 1_000_000;
