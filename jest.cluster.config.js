/** @type {import('jest').Config} */
// `npm run test:cluster`: several onair processes on one PostgreSQL, Redis and bucket.
const { transform, transformIgnorePatterns } = require("./jest.config");

module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test/cluster"],
  testMatch: ["**/*.cluster.ts"],
  transform,
  transformIgnorePatterns,
  testTimeout: 240000,
  // The failover suite's WHEP viewer is a libdatachannel peer, whose native callbacks stay
  // referenced after it closes (as in jest.config.js): the run would never end by itself.
  forceExit: true,
};
