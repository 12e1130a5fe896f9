import type { PeerConnection, RtcConfig } from "node-datachannel";
import type { RestrictedOffer } from "./sdp";

// What onair's answering peers (a WHIP publish, a WHEP viewer) do alike around ICE: gather
// before answering (no trickle), then check the offer's candidates only if the offering peer's
// own checks have not connected them first.

/** ICE candidates are gathered before answering (no trickle): within this. */
export const GATHER_TIMEOUT_MS = 5000;

/**
 * How long the offering peer's own checks have to connect before the offer's candidates are
 * checked too. A check that reaches a peer before it has applied the answer is refused there,
 * and libdatachannel then fails both peers within milliseconds (seen with a peer slow to apply
 * the answer on a loaded machine); the offering peer's checks connect this one first (its
 * address learnt from them), so the offer's candidates matter only to a peer whose checks
 * cannot get here.
 */
export const REMOTE_CANDIDATES_DELAY_MS = 1000;

/** Resolves once the peer's candidates are gathered, after GATHER_TIMEOUT_MS, or when `stop()` says so. */
export function gathered(pc: PeerConnection, stop: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    const check = setInterval(() => {
      if (stop() || pc.gatheringState() === "complete" || Date.now() - started > GATHER_TIMEOUT_MS) {
        clearInterval(check);
        resolve();
      }
    }, 5);
  });
}

/**
 * Gives the peer the offer's candidates unless it is connected already. One media section
 * carries them under BUNDLE; a candidate libdatachannel cannot use is skipped (`skipped`). A
 * peer bound to loopback (WEBRTC_BIND_ADDRESS=127.0.0.1, as in tests) checks loopback only.
 */
export function addOfferCandidates(pc: PeerConnection, offer: Pick<RestrictedOffer, "candidates">, bindAddress: string | undefined, skipped: (err: unknown, candidate: string) => void): void {
  if (pc.state() === "connected") return;
  const loopbackOnly = isLoopback(bindAddress);
  for (const c of offer.candidates) {
    if (loopbackOnly && !isLoopback(candidateAddress(c.candidate))) continue;
    try {
      pc.addRemoteCandidate(c.candidate, c.mid);
    } catch (err) {
      skipped(err, c.candidate);
    }
  }
}

export const isLoopback = (address: string | undefined) => address !== undefined && (address.startsWith("127.") || address === "::1");

/** The connection address of an ICE candidate line (`candidate:<foundation> <component> <transport> <priority> <address> …`). */
export const candidateAddress = (candidate: string): string | undefined => candidate.split(" ")[4];

/**
 * node-datachannel's configuration for onair's peers: the address they bind, and the UDP ports
 * ICE gathers on. A single port is shared by every peer (libjuice's UDP mux, told apart by
 * their ICE credentials): one port to open in a firewall for all publishers and viewers.
 */
export function peerConfig(o: { bindAddress?: string | undefined; udpPorts?: { first: number; last: number } | undefined }): RtcConfig {
  const ports = o.udpPorts;
  return {
    iceServers: [],
    ...(o.bindAddress ? { bindAddress: o.bindAddress } : {}),
    ...(ports ? { portRangeBegin: ports.first, portRangeEnd: ports.last } : {}),
    ...(ports && ports.first === ports.last ? { enableIceUdpMux: true } : {}),
  };
}
