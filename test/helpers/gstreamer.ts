import { spawnSync } from "node:child_process";

// GStreamer as a publisher from another RTMP stack than onair's and ffmpeg's: rtmp2sink (its
// own RTMP client) sends flvmux's legacy FLV of x264enc's H.264 and avenc_aac's AAC.

export const GST_LAUNCH = process.env.GST_LAUNCH_PATH || "gst-launch-1.0";
/** The elements a publish needs, and the Debian package of each (plus glib-networking for rtmps://). */
export const GST_ELEMENTS: Readonly<Record<string, string>> = {
  videotestsrc: "gstreamer1.0-plugins-base",
  audiotestsrc: "gstreamer1.0-plugins-base",
  x264enc: "gstreamer1.0-plugins-ugly",
  avenc_aac: "gstreamer1.0-libav",
  flvmux: "gstreamer1.0-plugins-good",
  rtmp2sink: "gstreamer1.0-plugins-bad",
};
export const GST_PACKAGES = "gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav glib-networking";

/**
 * Why GStreamer cannot publish here (gst-launch-1.0 or an element missing), or undefined when
 * it can. Checked once at a test file's load, before any server runs in the process.
 */
function missingGstreamer(): string | undefined {
  const inspect = GST_LAUNCH.replace(/gst-launch-1\.0$/, "gst-inspect-1.0");
  if (spawnSync(GST_LAUNCH, ["--version"], { stdio: "ignore" }).status !== 0) return `no ${GST_LAUNCH} on PATH`;
  const missing = Object.keys(GST_ELEMENTS).filter((e) => spawnSync(inspect, ["--exists", e], { stdio: "ignore" }).status !== 0);
  return missing.length ? `GStreamer lacks ${missing.map((e) => `${e} (${GST_ELEMENTS[e]})`).join(", ")}` : undefined;
}

export const gstreamerMissing = missingGstreamer();
export const haveGstreamer = gstreamerMissing === undefined;

/**
 * rtmps: which of the server's certificate checks apply. A test server's certificate is
 * self-signed, and GnuTLS (through glib-networking) trusts only the system's store: everything
 * is checked (its name, its dates) but its issuer.
 */
export const SELF_SIGNED_OK = "bad-identity+not-activated+expired+revoked+insecure+generic-error";

/**
 * gst-launch-1.0's argv for `seconds` of a live test picture (1 s keyframes) and a tone, as
 * H.264 and AAC in legacy FLV to `url` (rtmp:// or rtmps://), sent at the real-time pace;
 * `-e`: it ends with an EOS, so rtmp2sink unpublishes before it hangs up.
 */
export function gstPublishArgs(url: string, opts: { seconds?: number; width?: number; height?: number; fps?: number; tlsValidationFlags?: string } = {}): string[] {
  const { seconds = 5, width = 320, height = 180, fps = 30 } = opts;
  const rate = 48_000;
  const samplesPerBuffer = 1024;
  const sink = ["rtmp2sink", `location=${url}`, ...(opts.tlsValidationFlags !== undefined ? [`tls-validation-flags=${opts.tlsValidationFlags}`] : [])];
  return [
    "-e", "-q",
    "videotestsrc", "is-live=true", `num-buffers=${seconds * fps}`,
    "!", `video/x-raw,width=${width},height=${height},framerate=${fps}/1,format=I420`,
    "!", "x264enc", "tune=zerolatency", "speed-preset=ultrafast", `key-int-max=${fps}`, "bitrate=500",
    "!", "h264parse", "!", "flvmux", "name=mux", "streamable=true", "!", ...sink,
    "audiotestsrc", "is-live=true", `samplesperbuffer=${samplesPerBuffer}`, `num-buffers=${Math.ceil((seconds * rate) / samplesPerBuffer)}`,
    "!", `audio/x-raw,rate=${rate},channels=2`, "!", "audioconvert", "!", "avenc_aac", "bitrate=64000", "!", "aacparse", "!", "mux.",
  ];
}
