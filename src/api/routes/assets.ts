import { ClipRefused, type ClipService } from "../../assets";
import type { ApiDeps } from "../deps";
import { ApiError, notFound, notImplemented } from "../errors";
import { decodeCursor } from "../pagination";
import { route, type Route } from "../route";
import { assetObject, clipBody, createClipAnswer } from "../schemas/asset";
import { errorBody, listQuery } from "../schemas/common";
import { pageResult } from "./listing";

const TAG = "Assets";

/** POST /clip, the assets it makes, and the clips of a stream or a session (Livepeer's paths and shapes). */
export function assetRoutes(deps: ApiDeps): Route[] {
  const { store } = deps;
  const clips = (): ClipService => {
    if (!deps.clips) throw notImplemented("clips are not available on this server");
    return deps.clips;
  };
  const present = (a: Parameters<ClipService["present"]>[0]) => clips().present(a);

  return [
    route({
      method: "post",
      path: "/clip",
      tag: TAG,
      summary: "Clip a stream: an asset cut from the live window or the session's recording (copied, cut at keyframes), made in the background",
      body: clipBody,
      responses: {
        200: { description: "The asset, `waiting`, and its task; follow it with GET /asset/{id} or the asset.ready webhook", schema: createClipAnswer },
        400: { description: "The range is too long or not wholly within what can be clipped (the message says what is), or the user has MAX_ASSETS_PER_USER assets or their clips would pass MAX_CLIP_MB_PER_USER (the message names the setting)", schema: errorBody },
        404: { description: "No such playback id or session of the caller", schema: errorBody },
        422: { description: "A body that fails its schema (endTime not after startTime among others)", schema: errorBody },
        503: { description: "No room on this server's disk for the cut now (STORAGE_MIN_FREE_MB must stay free); try again after Retry-After", schema: errorBody },
      },
      handle: async ({ userId, body }) => {
        try {
          return { status: 200, body: await clips().create(userId, body) };
        } catch (err) {
          if (err instanceof ClipRefused) throw new ApiError(err.status, [err.message], err.retryAfterSeconds !== undefined ? { "retry-after": String(err.retryAfterSeconds) } : {});
          throw err;
        }
      },
    }),

    route({
      method: "get",
      path: "/asset",
      tag: TAG,
      summary: "List the caller's assets, newest first",
      query: listQuery,
      responses: { 200: { description: "One page of assets", schema: assetObject, list: true } },
      handle: ({ userId, query, req }) => pageResult(req, clips().assets.list(userId, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) }), present),
    }),

    route({
      method: "get",
      path: "/asset/:id",
      tag: TAG,
      summary: "Get an asset (its status while it is made; its URLs once ready)",
      responses: { 200: { description: "The asset", schema: assetObject }, 404: { description: "No such asset of the caller", schema: errorBody } },
      handle: async ({ userId, params }) => {
        const a = await clips().assets.getOwned(userId, params.id!);
        if (!a) throw notFound(`asset ${params.id!.slice(0, 64)}`);
        return { status: 200, body: present(a) };
      },
    }),

    route({
      method: "delete",
      path: "/asset/:id",
      tag: TAG,
      summary: "Delete an asset and its files",
      responses: { 204: { description: "Deleted" }, 404: { description: "No such asset of the caller", schema: errorBody } },
      handle: async ({ userId, params }) => {
        const a = await clips().assets.getOwned(userId, params.id!);
        if (!a) throw notFound(`asset ${params.id!.slice(0, 64)}`);
        await clips().delete(a);
        return { status: 204 };
      },
    }),

    route({
      method: "get",
      path: "/stream/:id/clips",
      tag: TAG,
      summary: "List the clips of a stream (all its sessions), newest first",
      query: listQuery,
      responses: {
        200: { description: "One page of assets", schema: assetObject, list: true },
        404: { description: "No such stream of the caller", schema: errorBody },
      },
      handle: async ({ userId, params, query, req }) => {
        const s = await store.streams.getOwned(userId, params.id!);
        if (!s) throw notFound(`stream ${params.id!.slice(0, 64)}`);
        // A session's child stream object lists that session's clips.
        const page = { limit: query.limit, beforeSeq: decodeCursor(query.cursor) };
        return pageResult(req, s.parentId === null ? clips().assets.listForStream(s.id, page) : clips().assets.listForSession(s.id, page), present);
      },
    }),

    route({
      method: "get",
      path: "/session/:id/clips",
      tag: TAG,
      summary: "List the clips of a session, newest first",
      query: listQuery,
      responses: {
        200: { description: "One page of assets", schema: assetObject, list: true },
        404: { description: "No such session of the caller", schema: errorBody },
      },
      handle: async ({ userId, params, query, req }) => {
        const s = await store.sessions.getOwned(userId, params.id!);
        if (!s) throw notFound(`session ${params.id!.slice(0, 64)}`);
        return pageResult(req, clips().assets.listForSession(s.id, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) }), present);
      },
    }),
  ];
}
