import express, { type NextFunction, type Request, type Response } from "express";
import { DEFAULT_LIMITS } from "../config";
import { routeLabel, type HttpMetrics } from "../metrics";
import type { ApiDeps } from "./deps";
import { ApiError, dataError, storageError } from "./errors";
import { buildOpenApi, renderDocsPage, type OpenApiDoc } from "./openapi";
import { ApiRateLimiter } from "./rateLimit";
import { allowedMethods, mountRoutes, type Route } from "./route";
import { assetRoutes } from "./routes/assets";
import { playbackRoutes } from "./routes/playback";
import { sessionRoutes } from "./routes/sessions";
import { signingKeyRoutes } from "./routes/signingKeys";
import { streamRoutes } from "./routes/streams";
import { streamTargetRoutes } from "./routes/streamTargets";
import { targetRoutes } from "./routes/targets";
import { viewershipRoutes } from "./routes/viewership";
import { webhookLogRoutes } from "./routes/webhookLogs";
import { webhookRoutes } from "./routes/webhooks";

export const BODY_LIMIT_BYTES = 1024 * 1024;

// eslint-disable-next-line @typescript-eslint/no-require-imports
const VERSION: string = require("../../package.json").version;

export function apiRoutes(deps: ApiDeps): Route[] {
  return [...streamRoutes(deps), ...streamTargetRoutes(deps), ...sessionRoutes(deps), ...targetRoutes(deps), ...webhookRoutes(deps), ...webhookLogRoutes(deps), ...playbackRoutes(deps), ...signingKeyRoutes(deps), ...assetRoutes(deps), ...viewershipRoutes(deps)];
}

/**
 * `authorization: Bearer <key>` → the key's user, or a 401 (spec section 5); then the key's
 * rate limit, or a 429. Only known keys are counted: a 401 costs no key anything.
 */
function authenticator(deps: ApiDeps) {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const limiter = deps.rateLimiter ?? new ApiRateLimiter({ perSecond: limits.apiRatePerSecond, burst: limits.apiRateBurst });
  return async (req: Request): Promise<string> => {
    const header = req.get("authorization");
    if (!header) throw new ApiError(401, ["missing authorization header: send `authorization: Bearer <API key>`"]);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new ApiError(401, ["authorization header must be `Bearer <API key>`"]);
    const userId = await deps.store.apiKeys.userIdForKey(match[1]!);
    if (!userId) throw new ApiError(401, ["invalid API key"]);
    const retryAfter = await limiter.take(match[1]!);
    if (retryAfter !== undefined) {
      deps.log.debug({ userId, retryAfter }, "API rate limit exceeded");
      throw new ApiError(429, [`rate limit exceeded: at most ${limits.apiRatePerSecond} requests per second (burst ${limits.apiRateBurst}) per API key; retry after ${retryAfter} s`], { "retry-after": String(retryAfter) });
    }
    return userId;
  };
}

/** A request's path for the log: without its query, and without the stream key of a WHIP URL (`/webrtc/<key>`). */
export function loggablePath(originalUrl: string): string {
  return originalUrl.split("?")[0]!.replace(/^\/webrtc\/[^/]+/, "/webrtc/<stream key>");
}

const hasBody = (req: Request) =>
  req.headers["transfer-encoding"] !== undefined || (req.headers["content-length"] ?? "0") !== "0";

/** Bodies are JSON (spec section 4): anything else is refused rather than read as empty. */
function requireJson(req: Request, _res: Response, next: NextFunction) {
  if (["POST", "PUT", "PATCH"].includes(req.method) && hasBody(req) && !req.is(["application/json", "+json"])) {
    throw new ApiError(415, [`content-type must be application/json, got ${req.get("content-type") ?? "none"}`]);
  }
  next();
}

/** Errors of the JSON body parser (http-errors with a `type`) → our error body. */
function bodyParserError(err: unknown): ApiError | undefined {
  const e = err as { type?: unknown; status?: unknown; message?: unknown };
  if (typeof e?.type !== "string" || typeof e.status !== "number" || e.status >= 500) return undefined;
  switch (e.type) {
    case "entity.parse.failed":
      return new ApiError(400, [`malformed JSON body: ${String(e.message)}`]);
    case "entity.too.large":
      return new ApiError(413, [`request body is larger than the limit of ${BODY_LIMIT_BYTES} bytes`]);
    default:
      return new ApiError(e.status, [String(e.message)]);
  }
}

/**
 * The HTTP app: the API under /api, then `more` (static media routes of other modules), then
 * the 404 and error handlers, which answer `{"errors": [...]}` everywhere.
 */
export function createApp(deps: ApiDeps, more: express.Router[] = [], metrics?: HttpMetrics): express.Express {
  const app = express();
  app.disable("x-powered-by");
  const routes = apiRoutes(deps);
  let openApi: OpenApiDoc | undefined;
  const doc = () => (openApi ??= buildOpenApi(routes, { version: VERSION, serverUrl: `${deps.publicUrl()}/api` }));

  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // The route pattern that matched (`/api/stream/:id`), never the raw path: ids would make
      // a new series per object.
      metrics?.httpRequest(req.method, routeLabel(req.baseUrl, req.route?.path), res.statusCode, ms / 1000);
      // originalUrl: req.path is relative to the router that last handled the request.
      deps.log.debug({ method: req.method, path: loggablePath(req.originalUrl), status: res.statusCode, ms: Math.round(ms * 10) / 10 }, "http request");
    });
    next();
  });

  const api = express.Router();
  api.use(requireJson);
  api.use(express.json({ limit: BODY_LIMIT_BYTES }));
  api.get("/openapi.json", (_req, res) => void res.json(doc()));
  api.get("/docs", (_req, res) => void res.type("html").send(renderDocsPage(doc())));
  mountRoutes(api, routes, authenticator(deps));
  api.use((req) => {
    const allowed = allowedMethods(routes, req.path);
    if (allowed.length > 0) {
      throw new ApiError(405, [`method ${req.method} is not allowed on /api${req.path}; allowed: ${allowed.join(", ")}`], { allow: allowed.join(", ") });
    }
    throw new ApiError(404, [`no such endpoint: ${req.method} /api${req.path}`]);
  });
  app.use("/api", api);
  for (const router of more) app.use(router);

  app.use((req: Request) => {
    throw new ApiError(404, [`not found: ${req.method} ${req.path}`]);
  });
  app.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const known = err instanceof ApiError ? err : (bodyParserError(err) ?? storageError(err) ?? dataError(err));
    if (known) {
      res.status(known.status).set(known.headers).json({ errors: known.errors });
      return;
    }
    // A 500 is a bug: say so to the client briefly and to the operator fully.
    deps.log.error({ err, method: req.method, path: loggablePath(req.originalUrl) }, "unexpected error while handling a request");
    res.status(500).json({ errors: ["internal error; the server log has the details"] });
  });
  return app;
}
