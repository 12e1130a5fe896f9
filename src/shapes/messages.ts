/** Type errors say "is required" for an absent field, "must be <kind>" for a wrong one. */
export const expected = (kind: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : `must be ${kind}`),
});
