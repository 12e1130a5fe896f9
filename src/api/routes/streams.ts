import { DEFAULT_LIMITS, type LimitSettings } from "../../config";
import { lockKey, type StreamRecord } from "../../db";
import { MAX_POLICY_REFRESH_SECONDS, presentStream, streamObject, type PlaybackPolicy } from "../../shapes";
import type { ApiDeps } from "../deps";
import { badRequest, notFound, unprocessable } from "../errors";
import { parseStreamFilters } from "../filters";
import { decodeCursor } from "../pagination";
import { route, type Route } from "../route";
import { errorBody } from "../schemas/common";
import { playbackPolicy, recordPatchBody, streamCreateBody, streamListQuery, streamPatchBody } from "../schemas/stream";
import type { z } from "zod";
import { checkUserCap } from "../caps";
import { checkInlineTargets, checkRefProfiles, resolveTargetRefs, targetCapProblem } from "./multistreamRefs";
import { pageResult } from "./listing";
import { checkPullSource, startPullRoute } from "./streamPull";
import { withSrtPort } from "./streamSrt";

const TAG = "Streams";
const notFoundResponse = { description: "No such stream of the caller", schema: errorBody };

/**
 * The stored form of a playback policy: `webhook` needs one of the caller's webhooks (checked
 * here, as it is written); `refreshInterval` is kept within MAX_POLICY_REFRESH_SECONDS.
 */
async function checkPlaybackPolicy(deps: ApiDeps, userId: string, p: z.output<typeof playbackPolicy> | null | undefined): Promise<PlaybackPolicy | null | undefined> {
  if (p === undefined || p === null) return p;
  if (p.type !== "webhook") return { type: p.type };
  if (p.webhookId === undefined) throw unprocessable("playbackPolicy.webhookId: a `webhook` policy needs the id of one of your webhooks");
  if (!(await deps.store.webhooks.getOwned(userId, p.webhookId))) throw unprocessable(`playbackPolicy.webhookId: no webhook ${p.webhookId.slice(0, 64)} of yours`);
  return {
    type: "webhook",
    webhookId: p.webhookId,
    ...(p.webhookContext !== undefined ? { webhookContext: p.webhookContext } : {}),
    ...(p.refreshInterval !== undefined ? { refreshInterval: Math.min(p.refreshInterval, MAX_POLICY_REFRESH_SECONDS) } : {}),
  };
}

/**
 * MAX_PROFILES_PER_STREAM and MAX_TARGETS_PER_STREAM (issue 8: abuse limits): each profile and
 * each target is another ffmpeg output. A 422 like a schema failure, naming the setting.
 */
function checkCaps(
  body: { profiles?: { name: string; width: number; height: number; fps: number }[] | null; multistream?: { targets: unknown[] } },
  limits: Pick<LimitSettings, "maxProfilesPerStream" | "maxTargetsPerStream" | "maxRenditionWidth" | "maxRenditionHeight" | "maxRenditionFps">,
): void {
  const problems: string[] = [];
  const profileCount = body.profiles?.length ?? 0;
  if (profileCount > limits.maxProfilesPerStream) {
    problems.push(`profiles: at most ${limits.maxProfilesPerStream} profiles per stream (MAX_PROFILES_PER_STREAM), got ${profileCount}`);
  }
  // Each rendition is encoded live on this node: 1080p60 at most by default (either orientation).
  (body.profiles ?? []).forEach((p, i) => {
    const long = Math.max(p.width, p.height);
    const short = Math.min(p.width, p.height);
    if (long > limits.maxRenditionWidth || short > limits.maxRenditionHeight) {
      problems.push(`profiles.${i}: ${p.width}x${p.height} is larger than ${limits.maxRenditionWidth}x${limits.maxRenditionHeight} (MAX_RENDITION_WIDTH, MAX_RENDITION_HEIGHT)`);
    }
    if (p.fps > limits.maxRenditionFps) problems.push(`profiles.${i}: ${p.fps} fps is more than ${limits.maxRenditionFps} (MAX_RENDITION_FPS)`);
  });
  const targetProblem = targetCapProblem(body.multistream?.targets.length ?? 0, limits.maxTargetsPerStream);
  if (targetProblem) problems.push(targetProblem);
  if (problems.length > 0) throw unprocessable(...problems);
}

export function streamRoutes(deps: ApiDeps): Route[] {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const access = streamAccess(deps);
  return [startPullRoute(deps, access.ownedParent), createStreamRoute(deps, access, limits), ...readStreamRoutes(deps, access), ...changeStreamRoutes(deps, access, limits), ...endStreamRoutes(deps, access)];
}

type StreamAccess = ReturnType<typeof streamAccess>;

/** How the routes find the caller's streams and show them. */
function streamAccess(deps: ApiDeps) {
  const { store } = deps;
  const present = async (s: StreamRecord) => {
    const json = presentStream(s, s.parentId ? [] : await store.streamTargets.listForStream(s.id), s.isActive ? deps.live.rates(s.id) : undefined, deps.live.health(s.id));
    // The API's view only (webhook payloads carry no ingest secrets, nor a pull source's).
    if (s.pull && !s.parentId) json.pull = s.pull;
    return deps.srt && s.srtPort !== null && s.srtPassphrase !== null && !s.parentId ? { ...json, srtUrl: deps.srt.url(s.srtPort, s.srtPassphrase) } : json;
  };

  /** The caller's stream, parent or child; anything else is a 404. */
  const owned = async (userId: string, id: string) => {
    const s = await store.streams.getOwned(userId, id);
    if (!s) throw notFound(`stream ${id.slice(0, 64)}`);
    return s;
  };

  /** The caller's parent stream: child stream objects are read-only history (docs/api.md#spec-21-stream-object). */
  const ownedParent = async (userId: string, id: string, refusal: string) => {
    const s = await owned(userId, id);
    if (s.parentId !== null) throw badRequest(refusal);
    return s;
  };

  return { present, owned, ownedParent };
}

/** POST /stream. */
function createStreamRoute(deps: ApiDeps, { present }: StreamAccess, limits: LimitSettings): Route {
  const { store } = deps;
  return route({
    method: "post",
    path: "/stream",
    tag: TAG,
    summary: "Create a stream",
    body: streamCreateBody,
    responses: { 201: { description: "The new stream", schema: streamObject }, 422: { description: "Invalid body", schema: errorBody } },
    handle: async ({ userId, body }) => {
      await checkPullSource(deps, body.pull);
      checkCaps(body, limits);
      await checkInlineTargets(deps, body.multistream?.targets ?? []);
      const policy = await checkPlaybackPolicy(deps, userId, body.playbackPolicy);
      const profiles = body.profiles ?? [];
      const stream = await store.transaction(async (tx) => {
        await lockKey(tx.db, `streams/${userId}`);
        checkUserCap(await tx.streams.countOwned(userId), 1, limits.maxStreamsPerUser, "streams", "MAX_STREAMS_PER_USER");
        const s = await tx.streams.create({ userId, name: body.name, profiles, record: body.record ?? false, playbackPolicy: policy ?? null, reconnectWindow: body.reconnectWindow ?? null, dvrWindow: body.dvrWindow ?? null, pull: body.pull ?? null });
        if (body.multistream) await tx.streamTargets.replaceForStream(s.id, await resolveTargetRefs(tx, userId, body.multistream, profiles, limits.maxTargetsPerUser));
        // Ingest nodes learn the new key.
        await deps.live.announce(tx.db, { streamId: s.id, change: "changed" });
        return s;
      });
      deps.log.info({ streamId: stream.id, userId }, "stream created");
      // The owner asks for the srtUrl here first: the port is given now (never to a pulled stream).
      return { status: 201, body: await present(await withSrtPort(deps, stream, { created: true })) };
    },
  });
}

/** GET /stream and GET /stream/:id. */
function readStreamRoutes(deps: ApiDeps, { present, owned }: StreamAccess): Route[] {
  const { store } = deps;
  return [
    route({
      method: "get",
      path: "/stream",
      tag: TAG,
      summary: "List the caller's streams, newest first (historic child streams too, unless streamsonly=1)",
      query: streamListQuery,
      responses: { 200: { description: "One page of streams", schema: streamObject, list: true } },
      handle: async ({ userId, query, req }) => {
        const filters = parseStreamFilters(query.filters);
        const page = await store.streams.list(userId, { streamsOnly: query.streamsonly, filters }, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) });
        return pageResult(req, page, present);
      },
    }),

    route({
      method: "get",
      path: "/stream/:id",
      tag: TAG,
      summary: "Get a stream",
      responses: { 200: { description: "The stream", schema: streamObject }, 404: notFoundResponse },
      // Reading one stream asks for its srtUrl: a port if it has none, its listener kept armed.
      handle: async ({ userId, params }) => ({ status: 200, body: await present(await withSrtPort(deps, await owned(userId, params.id!))) }),
    }),
  ];
}

/** PATCH /stream/:id and PATCH /stream/:id/record. */
function changeStreamRoutes(deps: ApiDeps, { ownedParent }: StreamAccess, limits: LimitSettings): Route[] {
  const { store } = deps;
  return [
    route({
      method: "patch",
      path: "/stream/:id",
      tag: TAG,
      summary: "Update a stream; `suspended: true` ends its live session and refuses publishes until false",
      body: streamPatchBody,
      responses: { 204: { description: "Updated" }, 400: { description: "A child stream object", schema: errorBody }, 404: notFoundResponse, 422: { description: "Invalid body", schema: errorBody } },
      handle: async ({ userId, body, params }) => {
        checkCaps(body, limits);
        const s = await ownedParent(userId, params.id!, "historic child stream objects are read-only; update the parent stream");
        await checkPullSource(deps, body.pull);
        await checkInlineTargets(deps, body.multistream?.targets ?? []);
        const policy = await checkPlaybackPolicy(deps, userId, body.playbackPolicy);
        const profiles = body.profiles === undefined ? s.profiles : (body.profiles ?? []);
        await store.transaction(async (tx) => {
          if (body.multistream) {
            await tx.streamTargets.replaceForStream(s.id, await resolveTargetRefs(tx, userId, body.multistream, profiles, limits.maxTargetsPerUser));
          } else if (body.profiles !== undefined) {
            // New profiles must still serve the references the stream already has.
            checkRefProfiles(await tx.streamTargets.listForStream(s.id), profiles);
          }
          await tx.streams.update(s.id, {
            name: body.name,
            profiles: body.profiles === undefined ? undefined : profiles,
            record: body.record,
            suspended: body.suspended,
            playbackPolicy: policy,
            reconnectWindow: body.reconnectWindow,
            dvrWindow: body.dvrWindow,
            pull: body.pull,
          });
          // The node running its session ends it, or applies the new targets; every ingest node
          // learns whether the key may publish.
          await deps.live.announce(tx.db, { streamId: s.id, change: body.suspended === true ? "suspended" : "changed" });
        });
        return { status: 204 };
      },
    }),

    route({
      method: "patch",
      path: "/stream/:id/record",
      tag: TAG,
      summary: "Turn recording on or off for the stream's future sessions",
      body: recordPatchBody,
      responses: { 204: { description: "Updated" }, 400: { description: "`can't set for session`", schema: errorBody }, 404: notFoundResponse },
      handle: async ({ userId, body, params }) => {
        // docs/api.md#spec-41-streams rule 2: only a parent stream's record can change.
        const s = await ownedParent(userId, params.id!, "can't set for session");
        await store.streams.update(s.id, { record: body.record });
        return { status: 204 };
      },
    }),
  ];
}

/** DELETE /stream/:id/terminate and DELETE /stream/:id: a live session ended, a stream deleted. */
function endStreamRoutes(deps: ApiDeps, { ownedParent }: StreamAccess): Route[] {
  const { store } = deps;
  return [
    route({
      method: "delete",
      path: "/stream/:id/terminate",
      tag: TAG,
      summary: "End the stream's live session now (the publisher may reconnect; suspend to keep it out)",
      responses: { 204: { description: "Terminated, or nothing was live" }, 400: { description: "A child stream object", schema: errorBody }, 404: notFoundResponse },
      handle: async ({ userId, params }) => {
        const s = await ownedParent(userId, params.id!, "historic child stream objects are read-only; terminate the parent stream");
        await deps.live.announce(store.db, { streamId: s.id, change: "terminated" });
        return { status: 204 };
      },
    }),

    route({
      method: "delete",
      path: "/stream/:id",
      tag: TAG,
      summary: "Delete a stream (ends its live session, if any)",
      responses: { 204: { description: "Deleted" }, 400: { description: "A child stream object", schema: errorBody }, 404: notFoundResponse },
      handle: async ({ userId, params }) => {
        const s = await ownedParent(userId, params.id!, "historic child stream objects are read-only; delete the parent stream");
        await store.transaction(async (tx) => {
          await tx.streams.softDelete(s.id);
          await deps.live.announce(tx.db, { streamId: s.id, change: "deleted" });
        });
        deps.log.info({ streamId: s.id, userId }, "stream deleted");
        return { status: 204 };
      },
    }),
  ];
}
