// One id for this run's PostgreSQL test databases (test/helpers/database.ts): the workers
// inherit it, and the teardown drops exactly this run's.
export default function globalSetup(): void {
  process.env.ONAIR_TEST_RUN ??= String(process.pid);
}
