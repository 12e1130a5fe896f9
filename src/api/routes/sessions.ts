import { presentSession, sessionObject } from "../../shapes";
import type { ApiDeps } from "../deps";
import { notFound } from "../errors";
import { decodeCursor } from "../pagination";
import { route, type Route } from "../route";
import { errorBody, listQuery } from "../schemas/common";
import { parentSessionsQuery } from "../schemas/session";
import { pageResult } from "./listing";

const TAG = "Sessions";

export function sessionRoutes(deps: ApiDeps): Route[] {
  const { store } = deps;
  const present = (s: Parameters<typeof presentSession>[0]) =>
    presentSession(s, { publicUrl: deps.publicUrl(), sign: deps.signRecording }, s.endedAt === null ? deps.live.rates(s.id) : undefined);

  return [
    route({
      method: "get",
      path: "/session",
      tag: TAG,
      summary: "List the caller's sessions, newest first",
      query: listQuery,
      responses: { 200: { description: "One page of sessions", schema: sessionObject, list: true } },
      handle: ({ userId, query, req }) =>
        pageResult(req, store.sessions.list(userId, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) }), present),
    }),

    route({
      method: "get",
      path: "/session/:id",
      tag: TAG,
      summary: "Get a session",
      responses: { 200: { description: "The session", schema: sessionObject }, 404: { description: "No such session of the caller", schema: errorBody } },
      handle: async ({ userId, params }) => {
        const s = await store.sessions.getOwned(userId, params.id!);
        if (!s) throw notFound(`session ${params.id!.slice(0, 64)}`);
        return { status: 200, body: present(s) };
      },
    }),

    route({
      method: "get",
      path: "/stream/:parentId/sessions",
      tag: TAG,
      summary: "List a stream's sessions, newest first; `record=1` keeps the recorded ones",
      query: parentSessionsQuery,
      responses: {
        200: { description: "One page of sessions", schema: sessionObject, list: true },
        404: { description: "No such parent stream of the caller", schema: errorBody },
      },
      handle: async ({ userId, params, query, req }) => {
        const parent = await store.streams.getOwned(userId, params.parentId!);
        if (!parent || parent.parentId !== null) throw notFound(`stream ${params.parentId!.slice(0, 64)}`);
        const page = store.sessions.listForParent(parent.id, { recordedOnly: query.record }, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) });
        return pageResult(req, page, present);
      },
    }),
  ];
}
