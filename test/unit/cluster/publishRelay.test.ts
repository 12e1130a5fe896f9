import { splitAddress } from "../../../src/cluster";

describe("splitAddress: where a node's RTMP is, as it says in the nodes table", () => {
  it.each([
    ["127.0.0.1:1935", { host: "127.0.0.1", port: 1935 }],
    ["ingest-b.internal:41000", { host: "ingest-b.internal", port: 41000 }],
    ["[::1]:1935", { host: "::1", port: 1935 }],
    ["[fd00::12]:65535", { host: "fd00::12", port: 65535 }],
  ])("%s", (address, expected) => {
    expect(splitAddress(address)).toEqual(expected);
  });

  it.each(["", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "host:port", ":1935", "127.0.0.1:123456"])("refuses %p", (address) => {
    expect(splitAddress(address)).toBeUndefined();
  });
});
