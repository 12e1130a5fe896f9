import { area, matching, oneOf, port, text, url } from "../declare";

// The public HTTP listener and the operator's own (/metrics, /readyz, /healthz), and the log.
export const http = area("http", {
  PORT: port({ default: 8080, doc: "HTTP port (API, playback). `0` picks a free port." }).at("port"),
  HOST: text({ default: "0.0.0.0", allowed: "an address", doc: "Bind address." }).at("host"),
  PUBLIC_URL: url({
    protocols: ["http:", "https:"],
    shown: "`http://localhost:$PORT` (`https://` with `TLS_CERT`)",
    doc: "Base of playback and recording URLs handed to clients.",
  }).at("publicUrlSetting"),
  // HTTP/2 over TLS on the public port (PEM files); both or neither. Without: HTTP/1.1.
  TLS_CERT: text({
    allowed: "a PEM file",
    doc: "PEM certificate file: with `TLS_KEY`, the public port speaks HTTPS with HTTP/2 (and HTTP/1.1). Both or neither. `PUBLIC_URL` then defaults to `https://localhost:$PORT`.",
  }),
  TLS_KEY: text({ allowed: "a PEM file", doc: "The PEM key file that goes with `TLS_CERT`." }),
  // The operator's listener (/metrics, /readyz): loopback by default, off the public port.
  ADMIN_PORT: port({
    default: -1,
    shown: "`PORT`+10 (`8090`); a free port when `PORT=0`",
    doc: "The operator's listener: `/metrics`, `/readyz`, `/healthz`.",
  }),
  ADMIN_HOST: text({
    default: "127.0.0.1",
    allowed: "an address",
    doc: "Its bind address: loopback, so only this machine (or a sidecar) scrapes it.",
  }).at("adminHost"),
  METRICS_TOKEN: matching({
    pattern: /^\S{16,}$/,
    what: "at least 16 characters, without spaces",
    quoteValue: false,
    doc: "When set, `/metrics` and `/readyz` also answer on the public port to `Authorization: Bearer <token>`.",
  }).at("metricsToken"),
  LOG_LEVEL: oneOf({
    values: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    default: "info",
    doc: "Logs are JSON lines on stderr (readable when stdout is a terminal).",
  }).at("logLevel"),
});
