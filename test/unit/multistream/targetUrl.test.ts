import { parseTargetUrl, withAddress } from "../../../src/multistream";

// Target urls as ffmpeg will get them: parsed, checked and rebuilt (pure).

const canonical = (input: string) => {
  const r = parseTargetUrl(input);
  if (!r.ok) throw new Error(r.error);
  return r.url.canonical;
};
const problem = (input: string) => {
  const r = parseTargetUrl(input);
  return r.ok ? undefined : r.error;
};

describe("parseTargetUrl", () => {
  it.each([
    ["rtmp://a.rtmp.youtube.com/live2/xxxx-xxxx-xxxx-xxxx", "rtmp://a.rtmp.youtube.com/live2/xxxx-xxxx-xxxx-xxxx"],
    // Facebook's keys carry a query: it stays, as it is, part of the stream name.
    ["rtmps://live-api-s.facebook.com:443/rtmp/FB-123-0-AbC?s_bl=1&s_sw=0", "rtmps://live-api-s.facebook.com:443/rtmp/FB-123-0-AbC?s_bl=1&s_sw=0"],
    ["RTMPS://Live.Twitch.TV:443/app/live_1_Key", "rtmps://live.twitch.tv:443/app/live_1_Key"],
    ["rtmp://user:p%40ss@ingest.example.com:1936/app/inst/key", "rtmp://user:p%40ss@ingest.example.com:1936/app/inst/key"],
    ["rtmp://127.0.0.1:1935/app/key", "rtmp://127.0.0.1:1935/app/key"],
    ["rtmp://[2001:DB8::1]/app/key", "rtmp://[2001:db8::1]/app/key"],
    ["srt://ingest.example.com:9000", "srt://ingest.example.com:9000"],
    ["srt://ingest.example.com:9000/?streamid=#!::r=live/key,m=publish&passphrase=0123456789abc&latency=200000", "srt://ingest.example.com:9000?streamid=#!::r=live/key,m=publish&passphrase=0123456789abc&latency=200000"],
    ["srt://[::ffff:8.8.8.8]:9000?mode=caller&pbkeylen=32&pkt_size=1316&timeout=5000000", "srt://[::ffff:8.8.8.8]:9000?mode=caller&pbkeylen=32&pkt_size=1316&timeout=5000000"],
  ])("%s → %s", (input, expected) => {
    expect(canonical(input)).toBe(expected);
  });

  it.each([
    ["a leading tab (ffmpeg would open a local file)", "\trtmp://x.example.com/app/k", /printable ASCII without spaces, tabs, newlines/],
    ["a trailing newline", "rtmp://x.example.com/app/k\n", /control characters/],
    ["a space inside", "rtmp://x.example.com/app/my key", /without spaces/],
    ["non-ASCII", "rtmp://x.example.com/app/clé", /printable ASCII/],
    ["a NUL", "rtmp://x.example.com/app/k\u0000", /control characters/],
    ["another scheme", "http://x.example.com/app/k", /must start with rtmp:\/\/, rtmps:\/\/ or srt:\/\/, got http:\/\//],
    ["a local file", "file:///etc/hosts", /must start with rtmp/],
    ["no scheme", "x.example.com/app/k", /must be an absolute URL/],
    ["ffmpeg's option syntax", "-f", /must be an absolute URL/],
    ["no application", "rtmp://x.example.com", /needs an application and stream key/],
    ["an empty application", "rtmp://x.example.com//k", /needs an application and stream key/],
    ["a number spelled as a name", "rtmp://2130706433/app/k", /must name its host/],
    ["a short IPv4 form", "rtmp://127.1/app/k", /must name its host/],
    ["a hex IPv4 form", "rtmp://0x7f.0.0.1/app/k", /must name its host/],
    ["an IPv6 zone", "rtmp://[fe80::1%25eth0]/app/k", /malformed IPv6/],
    ["port 0", "rtmp://x.example.com:0/app/k", /ports are 1 to 65535/],
    ["port too high", "rtmp://x.example.com:65536/app/k", /ports are 1 to 65535/],
    ["an empty host", "rtmp:///app/k", /must name its host/],
    ["srt listener mode", "srt://0.0.0.0:40007?mode=listener", /only mode=caller is allowed/],
    ["srt rendezvous mode", "srt://x.example.com:40007?mode=rendezvous", /only mode=caller is allowed/],
    ["an srt option off the list", "srt://x.example.com:9000?listen_timeout=1", /srt option "listen_timeout" is not allowed; allowed: streamid, passphrase/],
    ["srt transtype", "srt://x.example.com:9000?transtype=file", /not allowed/],
    ["an srt option twice", "srt://x.example.com:9000?streamid=a&streamid=b", /given twice/],
    ["an srt number that is not one", "srt://x.example.com:9000?latency=-1", /latency: must be an integer/],
    ["a short srt passphrase", "srt://x.example.com:9000?passphrase=short", /passphrase: must be 10 to 79/],
    ["srt without a port", "srt://x.example.com?streamid=k", /needs a port/],
    ["srt with a path", "srt://x.example.com:9000/live?streamid=k", /takes no path/],
    ["srt credentials", "srt://u:p@x.example.com:9000", /no user name or password/],
  ])("refuses %s", (_case, input, message) => {
    expect(problem(input)).toMatch(message);
  });

  it("puts a checked address in an srt url, and leaves rtmp(s) urls with their names", () => {
    const srt = parseTargetUrl("srt://ingest.example.com:9000?streamid=k");
    const rtmps = parseTargetUrl("rtmps://ingest.example.com/app/k");
    if (!srt.ok || !rtmps.ok) throw new Error("valid urls");
    expect(withAddress(srt.url, "93.184.216.34")).toBe("srt://93.184.216.34:9000?streamid=k");
    expect(withAddress(srt.url, "2606:2800:220:1::1")).toBe("srt://[2606:2800:220:1::1]:9000?streamid=k");
    expect(withAddress(rtmps.url, "93.184.216.34")).toBe("rtmps://ingest.example.com/app/k");
  });
});
