/** The field manager every controller writes status and finalizers as. */
export const fieldManager = "gitops-reverser";
