import { streamKeyFromPath } from "../../../src/ingest";

describe("streamKeyFromPath", () => {
  it.each([
    ["/live/abcd-efgh-ijkl-mnop", "abcd-efgh-ijkl-mnop"],
    ["/other/abcd", undefined],
    ["/live/", undefined],
    ["/live/a/b", undefined],
  ])("%s → %s", (p, key) => expect(streamKeyFromPath(p)).toBe(key));
});
