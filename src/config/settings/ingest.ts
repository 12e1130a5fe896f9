import net from "node:net";
import { MAX_DVR_WINDOW_SECONDS, MAX_RECONNECT_WINDOW_SECONDS } from "../../shapes";
import { area, custom, flag, integer, list, matching, port, portRange, Problem, text, url } from "../declare";

const ipAddress = (doc: string, shown: string) =>
  custom<string | undefined>({
    default: "unset",
    shown,
    allowed: "an IP address",
    fallback: () => undefined,
    doc,
    parse: (t, env) => (net.isIP(t) !== 0 ? t : new Problem(`${env} must be an IP address, got "${t}"`)),
  });

export const ingest = area("ingest", {
  RTMP_PORT: port({ default: 1935, doc: "RTMP ingest port." }).at("rtmpPort"),
  RTMPS_PORT: port({ default: 1936, doc: "RTMPS ingest port (RTMP over TLS), open only when `TLS_CERT` and `TLS_KEY` are set: OBS and ffmpeg publish to `rtmps://host:$RTMPS_PORT/live`." }).at("rtmpsPort"),
  RTMP_PUBLIC_URL: url({
    protocols: ["rtmp:", "rtmps:"],
    shown: "`rtmp://localhost:$RTMP_PORT/live`",
    doc: "Ingest base shown to broadcasters.",
  }).at("rtmpPublicUrlSetting"),
  // A publisher that drops (a Wi-Fi blip; OBS retries every few seconds) continues its session
  // if it is back within this window; 0 ends the session as soon as it leaves.
  RECONNECT_WINDOW_SECONDS: integer({
    default: 30,
    min: 0,
    max: MAX_RECONNECT_WINDOW_SECONDS,
    unit: "seconds",
    doc: "How long a session waits for its publisher to come back (`0` ends it when the publisher leaves). A stream's own `reconnectWindow` wins.",
  }).at("reconnectWindowSeconds"),
  // How far back viewers may seek in a live stream: its playlists keep this much listed (0:
  // only the last few segments, as without DVR).
  DVR_WINDOW_SECONDS: integer({
    default: 0,
    min: 0,
    max: MAX_DVR_WINDOW_SECONDS,
    unit: "seconds",
    doc: "How many seconds of a live stream its playlists list, so viewers can seek back (`0`: off). A stream's own `dvrWindow` wins.",
  }).at("dvrWindowSeconds"),
  // A publisher that sends no media for this long (asleep, uplink gone, half-open socket) is
  // disconnected, and its stream's reconnect window starts.
  PUBLISH_MEDIA_TIMEOUT_SECONDS: integer({
    default: 10,
    min: 1,
    max: 300,
    unit: "seconds",
    doc: "A publisher that sends no media for this long is disconnected, and the reconnect window starts.",
  }).at("publishMediaTimeoutMs", (s) => s * 1000),
  // WebRTC (WHIP ingest, WHEP playback): the UDP ports its peers gather on (unset: any; one port:
  // shared by all), the address they bind
  // (unset: every interface), the public address announced behind a 1:1 NAT, and the ICE
  // servers told to clients (OPTIONS and 201 Link headers).
  WEBRTC_UDP_PORTS: portRange({
    shown: "any",
    doc: "UDP ports the WebRTC peers (WHIP publishers, WHEP viewers) gather on; open them in the firewall. One port (`8189`) is shared by every peer.",
  }).at("webrtc.udpPorts"),
  WEBRTC_BIND_ADDRESS: ipAddress("The address WebRTC peers bind (tests use `127.0.0.1`).", "every interface").at("webrtc.bindAddress"),
  WEBRTC_STUN_PORT: integer({
    default: 3478,
    min: 0,
    max: 65_535,
    doc: "A UDP port answering STUN Binding requests (and TURN's with an error, onair relays nothing), on `WEBRTC_BIND_ADDRESS`: Livepeer's player asks the WHEP URL's host for STUN and TURN on 3478, and without an answer its ICE gathering waits out 5 s before it plays. `0`: none. A port already taken is logged and skipped.",
  }).at("webrtc.stunPort"),
  WEBRTC_PUBLIC_IP: ipAddress("Behind a 1:1 NAT: announced beside each host candidate, on the same port.", "unset").at("webrtc.publicIp"),
  WEBRTC_ICE_SERVERS: list({
    what: "stun:, stuns:, turn: or turns: URLs separated by commas",
    allowed: "`stun:`, `stuns:`, `turn:`, `turns:` URLs, comma-separated",
    entry: (e) => (/^(stuns?|turns?):[^\s<>"@]+$/.test(e) ? e : undefined),
    doc: "ICE servers told to WHIP and WHEP clients in `Link` headers (the player page uses them: a TURN server lets viewers behind UDP-blocking networks play over WebRTC); `WEBRTC_ICE_USERNAME` and `WEBRTC_ICE_CREDENTIAL` go with the `turn:` ones.",
  }).at("webrtc.iceServers"),
  WEBRTC_ICE_USERNAME: text({ doc: "The user name for the `turn:` servers of `WEBRTC_ICE_SERVERS`." }).at("webrtc.iceUsername"),
  WEBRTC_ICE_CREDENTIAL: text({ doc: "The credential for the `turn:` servers of `WEBRTC_ICE_SERVERS`." }).at("webrtc.iceCredential"),
  // A WebRTC publisher that sends no media for this long has gone (no DELETE came).
  WEBRTC_MEDIA_TIMEOUT_SECONDS: integer({
    default: 10,
    min: 2,
    max: 300,
    unit: "seconds",
    doc: "A WHIP publisher that sends nothing for this long has gone.",
  }).at("webrtc.mediaTimeoutMs", (s) => s * 1000),
  // WebRTC playback (WHEP) of live streams with a transcoded ladder: a viewer's peer on this
  // node's WebRTC ports, frames sent as encoded; the caps bound what viewers cost the node.
  WEBRTC_PLAYBACK: flag({
    default: true,
    doc: "WebRTC playback (WHEP at `/whep/<playbackId>`, the `WebRTC (H264)` source of playback info) of live streams (a copied source only without B-frames); `false`: HLS only.",
  }).at("webrtc.playback"),
  WEBRTC_MAX_VIEWERS: integer({
    default: 500,
    min: 0,
    max: 100_000,
    doc: "WebRTC viewers this node serves at most; past it a WHEP offer gets `503` with `Retry-After` (players fall back to HLS).",
  }).at("webrtc.maxViewers"),
  WEBRTC_MAX_VIEWERS_PER_STREAM: integer({
    default: 500,
    min: 0,
    max: 100_000,
    doc: "WebRTC viewers of one stream this node serves at most; past it a WHEP offer gets `503` with `Retry-After`.",
  }).at("webrtc.maxViewersPerStream"),
  WEBRTC_PENDING_PER_CLIENT: integer({
    default: 10,
    min: 1,
    max: 100_000,
    doc: "WHEP offers not yet connected one client address (an IPv6 /64) may have; past it an offer gets `429` with `Retry-After`. Each holds a viewer's place until it connects (15 s at most): raise it when many viewers share one address (a carrier-grade NAT, a proxy in front of onair).",
  }).at("webrtc.pendingPerClient"),
  // SRT ingest, off unless set: a stream whose owner asks for its srtUrl gets a port of this
  // range and a listener on it (one ffmpeg each, about 47 MB: the range is also the cap), callers
  // authenticate with the stream's SRT passphrase.
  SRT_PORTS: portRange({
    shown: "unset (SRT off)",
    doc: "UDP ports for streams' SRT listeners, one per stream whose owner asked for its `srtUrl` (never a pulled one); also the cap on listeners.",
  }),
  SRT_LATENCY_MS: integer({
    default: 200,
    min: 20,
    max: 8000,
    unit: "ms",
    doc: "The SRT latency put in `srtUrl` and used by the listeners.",
  }),
  // SRT ports are given on first use (the owner reads the stream's srtUrl), never to pulled
  // streams, and at most this many to one user, so one tenant cannot take the whole range.
  SRT_PORTS_PER_USER: custom<number | undefined>({
    default: "unset",
    shown: "a quarter of `SRT_PORTS`, at least 1",
    allowed: "1-65535",
    fallback: () => undefined,
    doc: "How many SRT ports (streams with an `srtUrl`) one user may hold; past it a stream has no `srtUrl`.",
    parse: (t, env) => (/^\d{1,5}$/.test(t) && Number(t) >= 1 && Number(t) <= 65535 ? Number(t) : new Problem(`${env} must be an integer from 1 to 65535, got "${t}"`)),
  }),
  // An armed listener is an ffmpeg of about 47 MB: one nobody has called or asked for in this
  // long is stopped, and armed again when its owner reads the stream (its port stays the stream's).
  SRT_LISTENER_IDLE_SECONDS: integer({
    default: 86_400,
    min: 5,
    max: 30 * 86_400,
    unit: "seconds",
    doc: "A stream's SRT listener is stopped after this long without a caller or its owner reading the stream, and armed again when the owner reads it.",
  }),
  // The host put in streams' SRT URLs (unset: the host of RTMP_PUBLIC_URL, else of PUBLIC_URL).
  SRT_PUBLIC_HOST: matching({
    pattern: /^[A-Za-z0-9.:-]{1,253}$/,
    what: "a host name or IP address",
    shown: "host of `RTMP_PUBLIC_URL`, else `PUBLIC_URL`",
    doc: "The host in `srtUrl`.",
  }),
});
