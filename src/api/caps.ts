import { badRequest } from "./errors";

// Per-user caps (MAX_STREAMS_PER_USER, MAX_WEBHOOKS_PER_USER, MAX_TARGETS_PER_USER): one tenant
// cannot fill the database, nor make every event fan out to thousands of receivers. A 400 (a
// valid request the current state forbids) naming the limit and its setting.

export function checkUserCap(have: number, adding: number, max: number, what: string, setting: string): void {
  if (have + adding <= max) return;
  throw badRequest(`at most ${max} ${what} per user (${setting}); this user has ${have}: delete some first`);
}
