import type { StreamRecord } from "../../db";
import { parsePullSource, type PullConfig } from "../../shapes";
import type { ApiDeps } from "../deps";
import { checkDestinations } from "../destinations";
import { badRequest } from "../errors";
import { route, type Route } from "../route";
import { errorBody } from "../schemas/common";

/**
 * A pull source's host passes the outbound policy as it is written, as webhook and target urls
 * do (a 422 naming the field); the pull ingest checks it again before every connection, since
 * DNS can change meanwhile.
 */
export async function checkPullSource(deps: ApiDeps, pull: PullConfig | null | undefined): Promise<void> {
  if (!pull) return;
  const parsed = parsePullSource(pull.source);
  // The body's schema has parsed it already: this is only the type's narrowing.
  if (!parsed.ok) return;
  await checkDestinations(deps, [{ field: "pull.source", host: parsed.source.host }]);
}

/** `POST /stream/{id}/start-pull` (the SDK's stream.startPull). */
export function startPullRoute(deps: ApiDeps, ownedParent: (userId: string, id: string, refusal: string) => Promise<StreamRecord>): Route {
  return route({
    method: "post",
    path: "/stream/:id/start-pull",
    tag: "Streams",
    summary: "Start pulling the stream's pull source now: a pull waiting to retry (back-off) tries at once; a pull already running goes on",
    responses: {
      204: { description: "Asked: the ingest node starts the pull within a few seconds" },
      400: { description: "The stream has no pull source, is suspended, or is a child stream", schema: errorBody },
      404: { description: "No such stream of the caller", schema: errorBody },
    },
    handle: async ({ userId, params }) => {
      const s = await ownedParent(userId, params.id!, "historic child stream objects are not pulled; start the parent stream's pull");
      if (!s.pull) throw badRequest("the stream has no pull source: set `pull` on it first");
      if (s.suspended) throw badRequest(`stream ${s.id} is suspended: unsuspend it and it is pulled again`);
      await deps.store.transaction(async (tx) => {
        await tx.streams.requestPull(s.id);
        // Ingest nodes re-read the stream; the one pulling it sees the new request.
        await deps.live.announce(tx.db, { streamId: s.id, change: "changed" });
      });
      deps.log.info({ streamId: s.id, userId }, "start-pull asked");
      return { status: 204 };
    },
  });
}
