import { exportPKCS8, exportSPKI, generateKeyPair } from "jose";
import { DEFAULT_LIMITS } from "../../config";
import { lockKey } from "../../db";
import { checkUserCap } from "../caps";
import type { ApiDeps } from "../deps";
import { notFound } from "../errors";
import { decodeCursor } from "../pagination";
import { route, type Route } from "../route";
import { errorBody, listQuery } from "../schemas/common";
import { presentSigningKey, signingKeyCreateBody, signingKeyCreatedObject, signingKeyObject, signingKeyPatchBody } from "../schemas/signingKey";
import { pageResult } from "./listing";

const TAG = "Access control";
const notFoundResponse = { description: "No such signing key of the caller", schema: errorBody };

/** A fresh ES256 (P-256) key pair as PEM texts: SPKI public, PKCS#8 private. */
async function newKeyPair(): Promise<{ publicPem: string; privatePem: string }> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  return { publicPem: (await exportSPKI(publicKey)).trim(), privatePem: (await exportPKCS8(privateKey)).trim() };
}

const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

export function signingKeyRoutes(deps: ApiDeps): Route[] {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const { store } = deps;
  const owned = async (userId: string, id: string) => {
    const k = await store.signingKeys.getOwned(userId, id);
    if (!k) throw notFound(`signing key ${id.slice(0, 64)}`);
    return k;
  };

  return [
    route({
      method: "post",
      path: "/access-control/signing-key",
      tag: TAG,
      summary: "Create a playback signing key (ES256): the private key is in this response only, and onair never stores it",
      body: signingKeyCreateBody,
      // 200, not 201: the livepeer SDK's createSigningKey accepts only 200 as success.
      responses: { 200: { description: "The new key with its privateKey (the only time it is returned)", schema: signingKeyCreatedObject }, 400: { description: "The user has MAX_SIGNING_KEYS_PER_USER keys", schema: errorBody } },
      handle: async ({ userId, body }) => {
        const pair = await newKeyPair();
        const k = await store.transaction(async (tx) => {
          await lockKey(tx.db, `signing-keys/${userId}`);
          checkUserCap(await tx.signingKeys.countOwned(userId), 1, limits.maxSigningKeysPerUser, "signing keys", "MAX_SIGNING_KEYS_PER_USER");
          return tx.signingKeys.create({ userId, name: body.name ?? "Signing Key", publicKey: pair.publicPem });
        });
        return { status: 200, body: { ...presentSigningKey(k), privateKey: base64(pair.privatePem) } };
      },
    }),

    route({
      method: "get",
      path: "/access-control/signing-key",
      tag: TAG,
      summary: "List the caller's signing keys, newest first (public keys only)",
      query: listQuery,
      responses: { 200: { description: "One page of signing keys", schema: signingKeyObject, list: true } },
      handle: ({ userId, query, req }) =>
        pageResult(req, store.signingKeys.listOwned(userId, { limit: query.limit, beforeSeq: decodeCursor(query.cursor) }), presentSigningKey),
    }),

    route({
      method: "get",
      path: "/access-control/signing-key/:id",
      tag: TAG,
      summary: "Get a signing key (its public key only)",
      responses: { 200: { description: "The signing key", schema: signingKeyObject }, 404: notFoundResponse },
      handle: async ({ userId, params }) => ({ status: 200, body: presentSigningKey(await owned(userId, params.id!)) }),
    }),

    route({
      method: "patch",
      path: "/access-control/signing-key/:id",
      tag: TAG,
      summary: "Rename, disable or enable a signing key; absent fields stay unchanged",
      body: signingKeyPatchBody,
      responses: { 204: { description: "Updated" }, 404: notFoundResponse, 422: { description: "Invalid body", schema: errorBody } },
      handle: async ({ userId, params, body }) => {
        const k = await owned(userId, params.id!);
        await store.signingKeys.update(k.id, { name: body.name, disabled: body.disabled });
        return { status: 204 };
      },
    }),

    route({
      method: "delete",
      path: "/access-control/signing-key/:id",
      tag: TAG,
      summary: "Delete a signing key: JWTs it signed open no playback any more",
      responses: { 204: { description: "Deleted" }, 404: notFoundResponse },
      handle: async ({ userId, params }) => {
        const k = await owned(userId, params.id!);
        await store.signingKeys.delete(k.id);
        return { status: 204 };
      },
    }),
  ];
}
