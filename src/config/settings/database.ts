import { area, url } from "../declare";

export const database = area("database", {
  /** State on PostgreSQL instead of the embedded SQLite file (DATA_DIR/onair.db). */
  DATABASE_URL: url({
    protocols: ["postgres:", "postgresql:"],
    doc: "State on PostgreSQL instead of `DATA_DIR/onair.db` (required for more than one node; several nodes may start at once: migrations take a lock).",
  }).at("databaseUrl"),
});
