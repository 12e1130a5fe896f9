import path from "node:path";
import { ConfigError, DEFAULT_LIMITS, loadConfig, publicUrl, rtmpPublicUrl } from "../../../src/config";

describe("loadConfig", () => {
  it("applies the documented defaults (docs/settings.md)", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8080, rtmpPort: 1935, host: "0.0.0.0", logLevel: "info", redisUrl: undefined });
    expect(c.dataDir).toBe(path.resolve("./storage"));
    expect(c.dbPath).toBe(path.join(path.resolve("./storage"), "onair.db"));
    expect(publicUrl(c, 8080)).toBe("http://localhost:8080");
    expect(rtmpPublicUrl(c, 1935)).toBe("rtmp://localhost:1935/live");
  });

  it("reads every setting", () => {
    const c = loadConfig({
      PORT: "9000",
      RTMP_PORT: "1936",
      HOST: "127.0.0.1",
      DATA_DIR: "/tmp/x",
      PUBLIC_URL: "https://video.example.com/",
      RTMP_PUBLIC_URL: "rtmp://ingest.example.com/live",
      REDIS_URL: "redis://127.0.0.1:6379",
      FFMPEG_PATH: "/opt/ffmpeg",
      LOG_LEVEL: "debug",
    });
    expect(c).toMatchObject({ port: 9000, rtmpPort: 1936, host: "127.0.0.1", dataDir: "/tmp/x", redisUrl: "redis://127.0.0.1:6379", ffmpegPath: "/opt/ffmpeg", logLevel: "debug" });
    expect(publicUrl(c, 9000)).toBe("https://video.example.com");
    expect(rtmpPublicUrl(c, 1936)).toBe("rtmp://ingest.example.com/live");
  });

  it.each([
    [{ PORT: "http" }, /PORT must be a port number/],
    [{ PORT: "70000" }, /PORT must be a port number/],
    [{ RTMP_PORT: "-1" }, /RTMP_PORT must be a port number/],
    [{ PUBLIC_URL: "not a url" }, /PUBLIC_URL must be a URL/],
    [{ PUBLIC_URL: "ftp://x" }, /PUBLIC_URL must use http:\/\/ or https:\/\//],
    [{ REDIS_URL: "http://localhost" }, /REDIS_URL must use redis:\/\//],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL must be one of/],
    [{ DVR_WINDOW_SECONDS: "21601" }, /DVR_WINDOW_SECONDS must be an integer from 0 to 21600 \(seconds\), got "21601"/],
    [{ DVR_WINDOW_SECONDS: "-1" }, /DVR_WINDOW_SECONDS must be an integer from 0 to 21600/],
    [{ DVR_WINDOW_SECONDS: "1.5" }, /DVR_WINDOW_SECONDS must be an integer from 0 to 21600/],
  ])("refuses %j with a clear message", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it("lists every problem at once", () => {
    try {
      loadConfig({ PORT: "x", LOG_LEVEL: "y" });
      throw new Error("expected a ConfigError");
    } catch (err) {
      expect((err as ConfigError).problems).toHaveLength(2);
    }
  });

  it("keeps the shape of Config that the rest of onair reads", () => {
    const c = loadConfig({ SRT_PORTS: "9000-9010", S3_ENDPOINT: "http://s3.local", S3_BUCKET: "rec" });
    expect(Object.keys(c).sort()).toEqual(
      [
        "port", "adminPort", "adminHost", "metricsToken", "rtmpPort", "rtmpsPort", "host", "dataDir", "publicUrlSetting", "rtmpPublicUrlSetting",
        "redisUrl", "ffmpegPath", "logLevel", "dbPath", "databaseUrl", "roles", "nodeId", "internalUrlSetting", "heartbeatMs",
        "leaseMs", "clockOffsetMs", "controlPollMs", "s3", "hlsSegmentSeconds", "hlsLowLatency", "tls", "hlsListSize", "maxClipSeconds",
        "clipWindowSeconds", "redisPrefix", "webhooks", "outbound", "limits", "recordingsRetentionDays", "webhookLogRetentionDays",
        "storageMinFreeBytes", "finalizeStallMs", "reconnectWindowSeconds", "dvrWindowSeconds", "publishMediaTimeoutMs", "transcodeBudget", "webrtc",
        "srt", "viewerWindowMs", "playbackTokenSeconds",
        "playbackSessionSeconds",
      ].sort(),
    );
    expect(Object.keys(c.webhooks).sort()).toEqual(["concurrency", "retryFirstMs", "retryWindowMs", "timeoutMs"]);
    expect(Object.keys(c.outbound).sort()).toEqual(["allowHosts", "allowPrivate"]);
    expect(Object.keys(c.webrtc).sort()).toEqual(["bindAddress", "iceCredential", "iceServers", "iceUsername", "maxViewers", "maxViewersPerStream", "mediaTimeoutMs", "pendingPerClient", "playback", "publicIp", "stunPort", "udpPorts"]);
    expect(Object.keys(c.srt!).sort()).toEqual(["idleMs", "latencyMs", "perUser", "ports", "publicHost"]);
    // A user's share of SRT ports: a quarter of the range unless set, at least one.
    expect(c.srt).toMatchObject({ perUser: 2, idleMs: 86_400_000 });
    expect(loadConfig({ SRT_PORTS: "9000" }).srt!.perUser).toBe(1);
    expect(loadConfig({ SRT_PORTS: "9000-9010", SRT_PORTS_PER_USER: "7", SRT_LISTENER_IDLE_SECONDS: "60" }).srt).toMatchObject({ perUser: 7, idleMs: 60_000 });
    expect(() => loadConfig({ SRT_PORTS: "9000-9010", SRT_PORTS_PER_USER: "0" })).toThrow(/SRT_PORTS_PER_USER/);
    expect(Object.keys(c.s3!).sort()).toEqual(["accessKeyId", "bucket", "endpoint", "forcePathStyle", "region", "secretAccessKey"]);
    expect(c.limits).toEqual(DEFAULT_LIMITS);
    expect(Object.keys(c.limits).sort()).toEqual(
      [
        "apiRatePerSecond", "apiRateBurst", "maxProfilesPerStream", "maxTargetsPerStream", "maxLiveStreamsPerUser", "maxStreamsPerUser",
        "maxWebhooksPerUser", "maxTargetsPerUser", "maxSigningKeysPerUser", "maxRenditionWidth", "maxRenditionHeight", "maxRenditionFps",
        "maxAssetsPerUser", "maxClipBytesPerUser", "maxPullsPerNode",
        "webhookQuestionRate", "webhookQuestionsInFlight", "nodeWebhookQuestionRate", "nodeWebhookQuestionsInFlight",
        "blockingWaitsPerPlayback", "blockingWaitsPerClient", "blockingWaitsPerNode", "publicMaxConnections",
      ].sort(),
    );
  });

  it("converts seconds and MiB where Config holds ms and bytes, and derives what several settings make", () => {
    const c = loadConfig({ NODE_HEARTBEAT_SECONDS: "2", STORAGE_MIN_FREE_MB: "3", PORT: "9000", HLS_LOW_LATENCY: "false", TRANSCODE_BUDGET: "0" });
    expect(c).toMatchObject({ heartbeatMs: 2000, leaseMs: 15_000, storageMinFreeBytes: 3 * 1024 * 1024, adminPort: 9010, hlsSegmentSeconds: 2, transcodeBudget: undefined, srt: undefined, s3: undefined, tls: undefined });
    expect(loadConfig({ PORT: "0" }).adminPort).toBe(0);
    expect(loadConfig({ NODE_ID: "edge-1" }).nodeId).toBe("edge-1");
    // DVR is off unless asked for; 6 hours at most.
    expect(loadConfig({}).dvrWindowSeconds).toBe(0);
    expect(loadConfig({ DVR_WINDOW_SECONDS: "21600" }).dvrWindowSeconds).toBe(21_600);
    expect(loadConfig({}).nodeId).toMatch(/^[A-Za-z0-9_.-]+-[0-9a-f]{6}$/);
  });

  it("checks the rules between settings only once every setting parses, and lists each broken one", () => {
    expect(() => loadConfig({ NODE_LEASE_SECONDS: "x", WEBHOOK_CONCURRENCY: "0" })).toThrow(/NODE_LEASE_SECONDS must be an integer/);
    try {
      loadConfig({ NODE_LEASE_SECONDS: "3", WEBHOOK_CONCURRENCY: "0", S3_BUCKET: "rec", TLS_KEY: "/k.pem" });
      throw new Error("expected a ConfigError");
    } catch (err) {
      expect((err as ConfigError).problems).toEqual([
        expect.stringMatching(/^NODE_LEASE_SECONDS \(3\) must be at least twice NODE_HEARTBEAT_SECONDS \(5\)/),
        expect.stringMatching(/^S3_ENDPOINT and S3_BUCKET go together/),
        expect.stringMatching(/^WEBHOOK_CONCURRENCY=0 needs REDIS_URL/),
        expect.stringMatching(/^TLS_CERT and TLS_KEY go together/),
      ]);
    }
  });
});
