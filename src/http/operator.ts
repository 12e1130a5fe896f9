import crypto from "node:crypto";
import express from "express";

// /metrics and /readyz are the operator's: they carry stream ids, counts and the state of the
// disk and database, and /readyz does work. They answer on the admin listener (ADMIN_PORT,
// loopback by default); on the public port only to a request carrying METRICS_TOKEN, for a
// scraper that must come over the network. Anyone else gets a 404 saying where they are.

const OPERATOR_PATHS = ["/metrics", "/readyz"];

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (\S+)$/.exec(header ?? "")?.[1];
  if (given === undefined) return false;
  const a = crypto.createHash("sha256").update(given).digest();
  const b = crypto.createHash("sha256").update(token).digest();
  return crypto.timingSafeEqual(a, b);
}

/** On the public app: lets operator routes through only with the token. */
export function operatorGate(token: string | undefined, adminAddress: () => string): express.Router {
  const router = express.Router();
  router.get(OPERATOR_PATHS, (req, res, next) => {
    if (token !== undefined && tokenMatches(req.headers.authorization, token)) return next();
    res
      .status(404)
      .set("cache-control", "no-store")
      .json({ errors: [`${req.path} is served on the operator's listener (${adminAddress()}, ADMIN_PORT), or here with METRICS_TOKEN as a bearer token`] });
  });
  return router;
}
