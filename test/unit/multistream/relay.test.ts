import { rtmpDestination } from "../../../src/multistream/relay";
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
