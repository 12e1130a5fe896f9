import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import express from "express";
import request from "supertest";
import type { Store } from "../../../src/db";
import { LiveHls, type LivePackager } from "../../../src/hls";
import { clientKey, hlsRouter, type HlsAccess } from "../../../src/http/hls";
import type { PlaybackGate, PlaybackSubject } from "../../../src/playback";

describe("clientKey: the address a held-open request is counted under", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["2001:db8:aa:bb:1:2:3:4", "2001:db8:aa:bb::/64"],
    ["2001:db8:aa:bb::1", "2001:db8:aa:bb::/64"],
    ["2001:0db8:00aa:00bb:ffff::9", "2001:db8:aa:bb::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["", ""],
  ])("%j → %j", (ip, key) => {
    expect(clientKey(ip)).toBe(key);
  });

  it("every address of one /64 shares a key; the next /64 does not", () => {
    const keys = new Set(["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2:0:0:0:abcd"].map(clientKey));
    expect(keys.size).toBe(1);
    expect(clientKey("2001:db8:1:3::1")).not.toBe([...keys][0]);
  });
});

describe("the live thumbnail route", () => {
  const playbackId = "abcdefgh12345678";
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-hls-thumb-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** A router with one live stream whose thumbnail is taken when asked (counted), under `policy`. */
  function app(policy: PlaybackSubject["policy"], refuse: boolean, known = true) {
    const live = new LiveHls();
    let takes = 0;
    live.set(playbackId, {} as LivePackager, async () => {
      takes++;
      fs.mkdirSync(path.join(dir, playbackId), { recursive: true });
      fs.writeFileSync(path.join(dir, playbackId, "thumbnail.jpg"), Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
    });
    const gate = { media: async () => (refuse ? { ok: false, status: 401, error: "no" } : { ok: true }) } as unknown as PlaybackGate;
    const access: HlsAccess = { gate, subject: async (id) => (known ? { playbackId: id, userId: "u", policy } : undefined) };
    const server = express().use(hlsRouter({} as Store, dir, live, access));
    return { server, takes: () => takes };
  }

  it("takes no still for a viewer the gate refuses", async () => {
    const a = app({ type: "jwt" } as PlaybackSubject["policy"], true);
    const res = await request(a.server).get(`/hls/${playbackId}/thumbnail.jpg`);
    expect(res.status).toBe(401);
    expect(a.takes()).toBe(0);
  });

  it("takes no still for a playback id no stream has", async () => {
    const a = app(null, false, false);
    expect((await request(a.server).get(`/hls/${playbackId}/thumbnail.jpg`)).status).toBe(404);
    expect(a.takes()).toBe(0);
  });

  it("takes one for a viewer the gate admits, and for a public stream", async () => {
    for (const [policy, refuse] of [[{ type: "jwt" }, false], [null, false]] as const) {
      const a = app(policy as PlaybackSubject["policy"], refuse);
      const res = await request(a.server).get(`/hls/${playbackId}/thumbnail.jpg`);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("image/jpeg");
      expect(a.takes()).toBe(1);
    }
  });
});
