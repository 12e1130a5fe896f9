import type { z } from "zod";
import { isStorageError } from "../db";

/**
 * The one error type of the API: a status and the messages of the `{"errors": [...]}` body.
 * docs/architecture.md#api-errors: 401 unknown key; 404 missing *or another user's* object; 422 a request that fails
 * its schema; 400 a valid request the current state forbids; 501 a feature onair lacks.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
    readonly headers: Record<string, string> = {},
  ) {
    super(errors.join("; "));
    this.name = "ApiError";
  }
}

export const notFound = (what: string) => new ApiError(404, [`${what} not found`]);
export const badRequest = (...messages: string[]) => new ApiError(400, messages);
export const unprocessable = (...messages: string[]) => new ApiError(422, messages);
export const notImplemented = (message: string) => new ApiError(501, [message]);

/** `profiles[0].bitrate: must be a positive integer`: where the problem is, then what it is. */
export function describeIssues(where: string, error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const at = issue.path.reduce<string>(
      (acc, p) => (typeof p === "number" ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
      "",
    );
    const prefix = at ? `${at}: ` : where ? `${where}: ` : "";
    return `${prefix}${issue.message}`;
  });
}

/**
 * The router's refusal of a path segment that is not valid percent-encoding (`/stream/%ZZ`):
 * a URIError it marks with status 400. Without this it would reach the error handler as an
 * unknown error, a 500.
 */
export function malformedPathError(err: unknown): ApiError | undefined {
  if (err instanceof URIError && (err as { status?: unknown }).status === 400) {
    return new ApiError(400, ["malformed request path: a segment is not valid percent-encoding"]);
  }
  return undefined;
}

/**
 * A value the database refused as data (PostgreSQL's SQLSTATE class 22: a NUL in text, a number
 * out of range): the request's fault, a 400, never a 500.
 */
export function dataError(err: unknown): ApiError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !/^22[0-9A-Z]{3}$/.test(code)) return undefined;
  return new ApiError(400, [`invalid input: ${(err as Error).message}`]);
}

/** A write the database could not make for want of storage: a 503 the client may retry. */
export function storageError(err: unknown): ApiError | undefined {
  if (!isStorageError(err)) return undefined;
  return new ApiError(503, ["storage unavailable: the server cannot write its state now (disk full or read-only); try again later"], { "retry-after": "30" });
}
