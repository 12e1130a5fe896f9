/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  // Type-checking is `npm run typecheck`'s job; tests only transpile, which keeps them fast.
  transform: { "^.+\\.ts$": ["ts-jest", { diagnostics: false }] },
  testTimeout: 60000,
};
