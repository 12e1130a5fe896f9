import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Writable } from "node:stream";
import { createLogger } from "../../../src/log";
import { ProcessRegistry } from "../../../src/media";
import { DirectPush, rtmpDestination } from "../../../src/multistream/relay";
import { parseTargetUrl } from "../../../src/multistream/targetUrl";

const parsed = (url: string) => {
  const p = parseTargetUrl(url);
  if (!p.ok) throw new Error(p.error);
  return p.url;
};

describe("rtmpDestination: connect to the checked address, name the host everywhere else", () => {
  it.each([
    [
      "rtmp with a host name: the default port, tcUrl as ffmpeg sends it",
      "rtmp://a.rtmp.youtube.com/live2/abcd-efgh",
      "142.250.1.1",
      { address: "142.250.1.1", port: 1935, app: "live2", streamName: "abcd-efgh", tcUrl: "rtmp://a.rtmp.youtube.com:1935/live2" },
    ],
    [
      "rtmps: port 443, SNI and the certificate's name are the host name",
      "rtmps://live-api-s.facebook.com/rtmp/FB-1-0-Ab?s_bl=1",
      "157.240.1.1",
      {
        address: "157.240.1.1",
        port: 443,
        tls: { servername: "live-api-s.facebook.com", verify: true },
        app: "rtmp",
        streamName: "FB-1-0-Ab?s_bl=1",
        tcUrl: "rtmps://live-api-s.facebook.com:443/rtmp",
      },
    ],
    [
      "rtmps to an IPv6 address: no SNI (RFC 6066 names hosts only)",
      "rtmps://[2001:db8::1]:8443/app/KEY",
      "2001:db8::1",
      { address: "2001:db8::1", port: 8443, tls: { servername: undefined, verify: true }, app: "app", streamName: "KEY", tcUrl: "rtmps://[2001:db8::1]:8443/app" },
    ],
  ])("%s", (_what, url, address, expected) => {
    expect(rtmpDestination(parsed(url), address, { verify: true })).toEqual(expected);
  });
});

describe("a source push's ffmpeg reads the publish on its stdin", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-push-feed-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("is fed from its spawn, and the feed is stopped once it has exited; a rendition push gets no stdin", async () => {
    // Stands in for ffmpeg: what comes on its stdin goes to a file, and its argv to another.
    const fake = path.join(dir, "ffmpeg");
    fs.writeFileSync(fake, `#!/bin/sh\necho "$*" > "${dir}/argv"\ncat > "${dir}/stdin"\n`, { mode: 0o755 });
    const fed: Writable[] = [];
    let stopped = 0;
    const source = {
      kind: "source" as const,
      name: "stream-id",
      feed: (into: Writable) => {
        fed.push(into);
        into.end("FLV bytes");
        return () => void stopped++;
      },
    };
    const common = { videoOnly: false, ffmpegPath: fake, registry: new ProcessRegistry(), processLog: createLogger("silent"), url: "srt://127.0.0.1:9000", onConnected: () => undefined };
    const push = new DirectPush({ ...common, input: source, destination: "srt://127.0.0.1:9000", tlsVerify: true, caFile: undefined });
    expect(fed).toHaveLength(1);
    expect(await push.ended).toEqual({ requested: false, inputEnded: true });
    expect(stopped).toBe(1);
    expect(fs.readFileSync(path.join(dir, "stdin"), "utf8")).toBe("FLV bytes");
    expect(fs.readFileSync(path.join(dir, "argv"), "utf8")).toContain("-f flv -i pipe:0");

    // A rendition push reads its playlist: its stdin is closed, and nothing is fed.
    const rendition = new DirectPush({ ...common, input: { kind: "rendition", playlist: "/nowhere/index.m3u8" }, destination: "srt://127.0.0.1:9000", tlsVerify: true, caFile: undefined });
    expect(await rendition.ended).toEqual({ requested: false, inputEnded: true });
    expect(fs.readFileSync(path.join(dir, "stdin"), "utf8")).toBe("");
    expect(fed).toHaveLength(1);
  });
});
