import path from "node:path";
import { ConfigError, loadConfig, publicUrl, rtmpPublicUrl } from "../../../src/config";

describe("loadConfig", () => {
  it("applies DESIGN.md's defaults", () => {
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
});
