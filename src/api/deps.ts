import type { ClipService } from "../assets";
import type { LimitSettings } from "../config";
import type { Store } from "../db";
import type { Logger } from "../log";
import type { OutboundPolicy } from "../outbound";
import type { LiveControl } from "../sessions";
import type { RateLimiter } from "./sharedRateLimit";

export interface ApiDeps {
  store: Store;
  log: Logger;
  /** PUBLIC_URL, known once the server has bound its port. */
  publicUrl(): string;
  /** The signature of a session's recording URLs (src/recordings keeps the key). */
  signRecording(sessionId: string): string;
  live: LiveControl;
  /** API rate limit and per-stream caps (config `limits`); DEFAULT_LIMITS when absent. */
  limits?: LimitSettings;
  /** Checks webhook and target urls as they are written; refusing private ones when absent. */
  outbound?: OutboundPolicy;
  /** The API rate limit's buckets (shared through Redis by several nodes); this process's own when absent. */
  rateLimiter?: RateLimiter;
  /**
   * SRT ingest (SRT_PORTS): a stream gets a listener port from `ports` when its owner first reads
   * it, at most `perUser` per user, shown as `srtUrl`; a read keeps the listener armed `idleMs`.
   */
  srt?: { ports: { first: number; last: number }; perUser: number; idleMs: number; url(port: number, passphrase: string): string };
  /** Clips (POST /clip) and the assets they make (src/assets); those routes answer 501 when absent. */
  clips?: ClipService;
  /** GET /data/views/now sums the nodes' viewer counts written within this long, ms; 15 s when absent. */
  viewerCountsFreshMs?: number;
  /** WebRTC playback (WHEP) is on: playback info lists it for live streams. */
  webrtcPlayback?: boolean;
  /** DVR_WINDOW_SECONDS: the window of a stream whose dvrWindow is unset; 0 when absent. */
  dvrWindowSeconds?: number;
}
