/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  // Type-checking is `npm run typecheck`'s job; tests only transpile, which keeps them fast.
  transform: {
    "^.+\\.ts$": ["ts-jest", { diagnostics: false }],
    // Kysely (0.29) and jose (6) ship only ES modules, which jest's CommonJS runtime cannot load
    // (Node itself requires them fine): the tests get them turned into CommonJS.
    "^.+\\.js$": ["ts-jest", { diagnostics: false, isolatedModules: true, tsconfig: { allowJs: true, module: "commonjs", target: "es2022", esModuleInterop: true } }],
  },
  transformIgnorePatterns: ["/node_modules/(?!(kysely|jose)/)"],
  testTimeout: 60000,
  // libdatachannel (node-datachannel, the WHIP peer and test client) keeps native callbacks
  // referenced after its peers close, until process exit: the run would never end by itself.
  forceExit: true,
  // PostgreSQL runs (TEST_DATABASE_URL): one id per run for its databases, dropped at the end.
  globalSetup: "<rootDir>/test/globalSetup.ts",
  globalTeardown: "<rootDir>/test/globalTeardown.ts",
};
