import { ApiError } from "../../../src/api/errors";
import { parseStreamFilters } from "../../../src/api/filters";
import { decodeCursor, encodeCursor, nextPageLink } from "../../../src/api/pagination";

describe("cursors", () => {
  it("round-trip and are opaque", () => {
    for (const seq of [1, 42, 123456789]) {
      const c = encodeCursor(seq);
      expect(c).not.toContain(String(seq));
      expect(decodeCursor(c)).toBe(seq);
    }
    expect(decodeCursor(undefined)).toBeUndefined();
    expect(decodeCursor("")).toBeUndefined();
  });

  it.each(["garbage", Buffer.from("x1").toString("base64url"), Buffer.from("s-1").toString("base64url"), "../../etc"])("refuses %s with a 422", (c) => {
    expect(() => decodeCursor(c)).toThrow(ApiError);
    try {
      decodeCursor(c);
    } catch (e) {
      expect((e as ApiError).status).toBe(422);
    }
  });

  it("builds the next link from the request, keeping other parameters", () => {
    const link = nextPageLink("http://h:1/api/stream?limit=2&filters=%5B%5D&cursor=old", 7);
    const url = new URL(/^<(.*)>; rel="next"$/.exec(link!)![1]!);
    expect(url.pathname).toBe("/api/stream");
    expect(url.searchParams.get("limit")).toBe("2");
    expect(url.searchParams.get("filters")).toBe("[]");
    expect(decodeCursor(url.searchParams.get("cursor")!)).toBe(7);
    expect(nextPageLink("http://h/api/stream", null)).toBeUndefined();
  });
});

describe("parseStreamFilters", () => {
  it.each([
    [undefined, {}],
    ["[]", {}],
    ['[{"id":"isActive","value":true}]', { isActive: true }],
    ['[{"id":"record","value":"false"},{"id":"suspended","value":1}]', { record: false, suspended: true }],
    ['[{"id":"name","value":"cam"}]', { name: "cam" }],
  ])("%s → %j", (raw, expected) => {
    expect(parseStreamFilters(raw)).toEqual(expected);
  });

  it.each([
    ["{", /JSON array/],
    ['{"id":"isActive"}', /JSON array/],
    ["[1]", /object with a string id/],
    ['[{"id":"isActive","value":"maybe"}]', /boolean/],
    ['[{"id":"name","value":3}]', /string/],
    ['[{"id":"color","value":"red"}]', /unknown filter id "color"; known ids: isActive, record, suspended, name/],
  ])("refuses %s", (raw, message) => {
    expect(() => parseStreamFilters(raw)).toThrow(message);
  });
});
