import dgram from "node:dgram";
import { chromium, type Browser } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium } from "../helpers/browser";
import { startTestServer, type TestServer } from "../helpers/server";

// Livepeer's player builds its peer with `stun:<host>` and `turn:<host>` (user "livepeer") of the
// WHEP URL it plays. With nobody answering there, Chromium's ICE gathering does not complete
// (15 s and counting, measured) and that player waits out its own 5 s cap before it offers. With
// onair's STUN responder on the port, gathering completes at once: here, in real headless Chromium.

if (!haveChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
const inChromium = haveChromium ? it : it.skip;

/** A UDP port free a moment ago. */
async function freeUdpPort(): Promise<number> {
  const s = dgram.createSocket("udp4");
  await new Promise<void>((r) => s.bind(0, "127.0.0.1", () => r()));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

let t: TestServer;
let browser: Browser | undefined;
let port: number;

beforeAll(async () => {
  port = await freeUdpPort();
  t = await startTestServer({ WEBRTC_STUN_PORT: String(port), WEBRTC_BIND_ADDRESS: "127.0.0.1" });
  if (haveChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

inChromium("a peer given onair's host as STUN and TURN server gathers its candidates at once", async () => {
  const page = await browser!.newPage();
  // Plain JavaScript in a string: the page has no TypeScript helpers (nor does tsc know the DOM here).
  const result = (await page.evaluate(`(async () => {
    const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:${port}" }, { urls: "turn:127.0.0.1:${port}", username: "livepeer", credential: "livepeer" }] });
    pc.addTransceiver("video", { direction: "recvonly" });
    const started = performance.now();
    await pc.setLocalDescription(await pc.createOffer());
    const complete = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 10000);
      pc.onicegatheringstatechange = () => {
        if (pc.iceGatheringState !== "complete") return;
        clearTimeout(timer);
        resolve(true);
      };
    });
    const ms = performance.now() - started;
    pc.close();
    return { complete, ms };
  })()`)) as { complete: boolean; ms: number };
  await page.close();
  expect(result.complete).toBe(true);
  // Well under the 5 s such a player waits at most (and the 15 s+ it takes with nobody answering).
  expect(result.ms).toBeLessThan(3000);
});
