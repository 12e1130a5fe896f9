/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  // Type-checking is `npm run typecheck`'s job; tests only transpile, which keeps them fast.
  transform: { "^.+\\.ts$": ["ts-jest", { diagnostics: false }] },
  testTimeout: 60000,
  // PostgreSQL runs (TEST_DATABASE_URL): one id per run for its databases, dropped at the end.
  globalSetup: "<rootDir>/test/globalSetup.ts",
  globalTeardown: "<rootDir>/test/globalTeardown.ts",
};
