import type { Config, Role } from "../config";
import type { Logger } from "../log";
import type { StopRegistrar } from "../shutdown";

/** What every area's wiring is given: the settings, the log, and where it says how its components stop. */
export interface Wiring {
  config: Config;
  log: Logger;
  stops: StopRegistrar;
  has(role: Role): boolean;
}

export function wiring(config: Config, log: Logger, stops: StopRegistrar): Wiring {
  return { config, log, stops, has: (role) => config.roles.includes(role) };
}
