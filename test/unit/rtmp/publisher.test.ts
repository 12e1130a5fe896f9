import { splitRtmpPath } from "../../../src/rtmp/publisher";

describe("splitRtmpPath: app and stream name, as ffmpeg splits a url's path", () => {
  it.each([
    ["/live2/abcd-efgh-ijkl", "live2", "abcd-efgh-ijkl"],
    ["/app/KEY?s_bl=1&s_sw=0", "app", "KEY?s_bl=1&s_sw=0"],
    ["/app/instance/KEY", "app/instance", "KEY"],
    ["/app/instance/sub/KEY", "app/instance", "sub/KEY"],
    ["/app/mp4:folder/file", "app", "mp4:folder/file"],
    ["/app/KEY?next=/x/y", "app", "KEY?next=/x/y"],
    ["/app", "app", ""],
  ])("%s → app %j, name %j", (path, app, streamName) => {
    expect(splitRtmpPath(path)).toEqual({ app, streamName });
  });
});
