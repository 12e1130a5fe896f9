import pino, { type Logger } from "pino";

export type { Logger };

// One logger for the whole service. JSON lines for machines; readable lines when a person
// watches a terminal. API keys travel in the authorization header: never write it.
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: "onair" },
    redact: { paths: ["req.headers.authorization", "headers.authorization", "apiKey", "key"], censor: "[redacted]" },
  };
  if (destination) return pino(options, destination);
  if (process.stdout.isTTY && !process.env.CI) {
    return pino({ ...options, transport: { target: "pino-pretty", options: { destination: 2 } } });
  }
  return pino(options, pino.destination(2));
}
