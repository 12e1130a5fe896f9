import type { NextFunction, Request, Response, Router } from "express";
import type { z } from "zod";
import { ApiError, describeIssues, malformedPathError } from "./errors";

export type Method = "get" | "post" | "put" | "patch" | "delete";

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteContext<B, Q> {
  /** The caller (empty on routes without auth). */
  userId: string;
  body: B;
  query: Q;
  params: Record<string, string>;
  req: Request;
}

export interface RouteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** The response is a JSON array of `schema`, with a `Link` header for the next page. */
  list?: boolean;
}

export interface RouteSpec<B extends z.ZodType | undefined, Q extends z.ZodType | undefined> {
  method: Method;
  /** Express-style path relative to /api, e.g. `/stream/:id`. */
  path: string;
  tag: string;
  summary: string;
  /** Defaults to true: `authorization: Bearer <key>` required. */
  auth?: boolean;
  body?: B;
  query?: Q;
  responses: Record<number, ResponseSpec>;
  handle(ctx: RouteContext<Out<B>, Out<Q>>): RouteResult | Promise<RouteResult>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Route = RouteSpec<any, any>;

/** Declares a route; request and response schemas serve validation and the OpenAPI doc alike. */
export function route<B extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined>(
  spec: RouteSpec<B, Q>,
): Route {
  return spec;
}

/**
 * Where in `value` a string holds a NUL character, if anywhere (pure). PostgreSQL's text cannot
 * store one, so it is refused on both engines alike, with the field named.
 */
export function nulAt(value: unknown): string | undefined {
  // Iterative: a body may nest thousands deep, and its schema refuses it after this looks.
  const stack: [unknown, string][] = [[value, ""]];
  while (stack.length > 0) {
    const [v, at] = stack.pop()!;
    if (typeof v === "string") {
      if (v.includes("\u0000")) return at || "value";
    } else if (v && typeof v === "object") {
      for (const [k, child] of Object.entries(v)) {
        const path = at ? `${at}.${k}` : k;
        if (k.includes("\u0000")) return at || "value";
        stack.push([child, path]);
      }
    }
  }
  return undefined;
}

function parseWith(schema: z.ZodType | undefined, value: unknown, where: string): unknown {
  if (!schema) return undefined;
  const nul = nulAt(value);
  if (nul) throw new ApiError(422, [`${where === "body" ? "" : `${where}.`}${nul}: must not contain NUL characters`]);
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError(422, describeIssues(where, result.error));
  return result.data;
}

/** Mounts routes on a router; `authenticate` resolves the caller or throws a 401. */
export function mountRoutes(router: Router, routes: Route[], authenticate: (req: Request) => Promise<string>): void {
  for (const r of routes) {
    router[r.method](r.path, async (req: Request, res: Response) => {
      const userId = r.auth === false ? "" : await authenticate(req);
      // No object's id holds a NUL (nor can PostgreSQL look one up): nothing there, as for any unknown id.
      if (Object.values(req.params as Record<string, string>).some((v) => v.includes("\u0000"))) {
        throw new ApiError(404, [`not found: ${req.method} /api${req.path.replace(/\u0000/g, "%00")}`]);
      }
      const query = parseWith(r.query, req.query, "query");
      const body = parseWith(r.body, req.body ?? {}, "body");
      const result = await r.handle({ userId, body, query, params: req.params as Record<string, string>, req });
      if (result.headers) res.set(result.headers);
      if (result.body === undefined) res.status(result.status).end();
      else res.status(result.status).json(result.body);
    });
  }
  // Matching a route decodes its params; a bad `%` escape fails there, before any handler runs.
  router.use((err: unknown, _req: Request, _res: Response, next: NextFunction) => next(malformedPathError(err) ?? err));
}

/** `/stream/:id` → a regex for the path as requested. */
function pathPattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}/?$`);
}

/** The methods some route offers for a path: tells a 405 from a 404. */
export function allowedMethods(routes: Route[], path: string): string[] {
  const methods = routes.filter((r) => pathPattern(r.path).test(path)).map((r) => r.method.toUpperCase());
  return [...new Set(methods)];
}
