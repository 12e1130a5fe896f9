import { DEFAULT_OUTBOUND, OutboundPolicy } from "../outbound";
import type { ApiDeps } from "./deps";
import { unprocessable } from "./errors";

const defaultPolicy = new OutboundPolicy(DEFAULT_OUTBOUND);

/**
 * A url's host checked by the outbound policy when it is written (webhook url, target url): a
 * literal private address, or a name resolving to one, is a 422 that says how the operator can
 * allow it. A name that does not resolve yet is taken (its DNS may come later); every
 * connection is checked again when it is made, so nothing taken here is trusted later.
 */
export async function checkDestinations(deps: Pick<ApiDeps, "outbound">, hosts: { field: string; host: string }[]): Promise<void> {
  const policy = deps.outbound ?? defaultPolicy;
  const checks = await Promise.all(hosts.map(async (h) => ({ ...h, check: await policy.check(h.host) })));
  const problems = checks.flatMap(({ field, check }) => (check.outcome === "refused" ? [`${field}: ${check.reason}`] : []));
  if (problems.length > 0) throw unprocessable(...problems);
}
