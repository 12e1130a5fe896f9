import fs from "node:fs";
import path from "node:path";
import { locateFfmpeg } from "../../../src/media/ffmpegLocator";
import { tempDir } from "../../helpers/server";

describe("locateFfmpeg", () => {
  const dir = tempDir();
  const fake = path.join(dir, "ffmpeg");
  fs.writeFileSync(fake, "#!/bin/sh\n", { mode: 0o755 });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("FFMPEG_PATH first", () => {
    expect(locateFfmpeg(fake, "/usr/bin")).toEqual({ path: fake, source: "FFMPEG_PATH" });
  });

  it("refuses an FFMPEG_PATH that is not an executable file", () => {
    expect(() => locateFfmpeg(path.join(dir, "missing"), "")).toThrow(/FFMPEG_PATH=.* is not an executable file/);
    expect(() => locateFfmpeg(dir, "")).toThrow(/not an executable file/);
  });

  it("then PATH, in order", () => {
    expect(locateFfmpeg(undefined, `/nonexistent:${dir}:/usr/bin`)).toEqual({ path: fake, source: "PATH" });
  });

  it("then the npm-shipped binary", () => {
    const found = locateFfmpeg(undefined, "/nonexistent");
    expect(found?.source).toBe("@ffmpeg-installer/ffmpeg");
    expect(fs.existsSync(found!.path)).toBe(true);
  });
});
