import { gstPublishArgs, SELF_SIGNED_OK } from "../../helpers/gstreamer";

// The GStreamer publisher's argv: one pipeline string split at its spaces, as gst-launch-1.0
// reads its arguments.

/** The elements of a launch line, in order, each with its properties. */
function elements(argv: string[]): { name: string; props: Record<string, string> }[] {
  const out: { name: string; props: Record<string, string> }[] = [];
  for (const arg of argv.filter((a) => !a.startsWith("-"))) {
    if (arg === "!") continue;
    const eq = arg.indexOf("=");
    if (eq > 0 && /^[a-z-]+$/.test(arg.slice(0, eq)) && out.length) out[out.length - 1]!.props[arg.slice(0, eq)] = arg.slice(eq + 1);
    else out.push({ name: arg, props: {} });
  }
  return out;
}

describe("gstPublishArgs", () => {
  it("ends with an EOS (-e): rtmp2sink unpublishes before it hangs up", () => {
    expect(gstPublishArgs("rtmp://127.0.0.1:1935/live/k")).toContain("-e");
  });

  it("video and audio for `seconds` at the real-time pace, 1 s keyframes, muxed into FLV for the url", () => {
    const els = elements(gstPublishArgs("rtmp://127.0.0.1:1935/live/k", { seconds: 4, fps: 25, width: 640, height: 360 }));
    const byName = (n: string) => els.find((e) => e.name === n)!;
    expect(byName("videotestsrc").props).toMatchObject({ "is-live": "true", "num-buffers": "100" });
    expect(els.find((e) => e.name.startsWith("video/x-raw"))!.name).toContain("width=640,height=360,framerate=25/1");
    expect(byName("x264enc").props["key-int-max"]).toBe("25");
    // 4 s of 48 kHz audio in buffers of 1024 samples: 187.5, rounded up.
    expect(byName("audiotestsrc").props).toMatchObject({ "is-live": "true", samplesperbuffer: "1024", "num-buffers": "188" });
    expect(byName("rtmp2sink").props).toEqual({ location: "rtmp://127.0.0.1:1935/live/k" });
    // The audio branch joins the muxer by its name.
    expect(byName("flvmux").props.name).toBe("mux");
    expect(els[els.length - 1]!.name).toBe("mux.");
    expect(els.map((e) => e.name).filter((n) => /^(x264enc|h264parse|avenc_aac|aacparse|flvmux)$/.test(n))).toEqual(["x264enc", "h264parse", "flvmux", "avenc_aac", "aacparse"]);
  });

  it("rtmps: tls-validation-flags only when given; for a self-signed certificate every check but its issuer's", () => {
    expect(elements(gstPublishArgs("rtmps://127.0.0.1:1936/live/k", { tlsValidationFlags: SELF_SIGNED_OK })).find((e) => e.name === "rtmp2sink")!.props).toEqual({
      location: "rtmps://127.0.0.1:1936/live/k",
      "tls-validation-flags": SELF_SIGNED_OK,
    });
    expect(SELF_SIGNED_OK.split("+")).not.toContain("unknown-ca");
    expect(SELF_SIGNED_OK.split("+")).toEqual(expect.arrayContaining(["bad-identity", "expired", "not-activated"]));
  });
});
