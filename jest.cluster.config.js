/** @type {import('jest').Config} */
// `npm run test:cluster`: several onair processes on one PostgreSQL, Redis and bucket.
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test/cluster"],
  testMatch: ["**/*.cluster.ts"],
  transform: { "^.+\\.ts$": ["ts-jest", { diagnostics: false }] },
  testTimeout: 240000,
};
