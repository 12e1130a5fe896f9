import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import express from "express";
import { whepRouter } from "../../../src/http/whep";
import type { PlaybackGate } from "../../../src/playback";

// A WHEP request for a stream another node packages is passed to that node with the cluster's
// proxy mark. HTTP/1.1 lets a client send its request target in absolute form
// (`GET http://host/path`), which Node and Express route by its path alone.

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));
}

function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, "127.0.0.1", () => c.write(text));
    let out = "";
    c.on("data", (d) => (out += d.toString()));
    c.on("end", () => resolve(out));
    c.on("error", reject);
  });
}

describe("WHEP pass-on", () => {
  const servers: http.Server[] = [];
  afterAll(() => servers.forEach((s) => s.close()));

  it("sends the proxy mark only to the node that packages the stream", async () => {
    const seen: { host: string; mark: string | undefined }[] = [];
    const record = (name: string) => http.createServer((req, res) => {
      seen.push({ host: name, mark: req.headers["x-onair-proxied"] as string | undefined });
      res.end("{}");
    });
    const packaging = record("packaging");
    const elsewhere = record("elsewhere");
    servers.push(packaging, elsewhere);
    const packagingPort = await listen(packaging);
    const elsewherePort = await listen(elsewhere);
    const app = express().use(whepRouter({
      whep: undefined,
      gate: {} as PlaybackGate,
      subject: () => Promise.resolve(undefined),
      iceLinks: [],
      publicIceLinks: [],
      remote: { find: () => Promise.resolve(`http://127.0.0.1:${packagingPort}`), mark: "the-cluster-mark" },
    }));
    const front = http.createServer(app);
    servers.push(front);
    const port = await listen(front);
    await rawRequest(port, `GET http://127.0.0.1:${elsewherePort}/whep/abcdefghijklmnop/anyid HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(seen.filter((s) => s.host === "elsewhere")).toEqual([]);
  });
});
