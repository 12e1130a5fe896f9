/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  // Type-checking is `npm run typecheck`'s job; tests only transpile, which keeps them fast.
  transform: { "^.+\\.ts$": ["ts-jest", { diagnostics: false }] },
  testTimeout: 60000,
  // libdatachannel (node-datachannel, the WHIP peer and test client) keeps native callbacks
  // referenced after its peers close, until process exit: the run would never end by itself.
  forceExit: true,
  // PostgreSQL runs (TEST_DATABASE_URL): one id per run for its databases, dropped at the end.
  globalSetup: "<rootDir>/test/globalSetup.ts",
  globalTeardown: "<rootDir>/test/globalTeardown.ts",
};
