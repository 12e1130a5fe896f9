import type { LivePackager } from "./packager";

/**
 * The packagers of the sessions live on this node, by playback id: what the HLS routes answer
 * from without touching the database or the disk. A session registers when it starts and
 * leaves when it ends (suspend and delete end it), so a playback id found here is live now.
 */
export class LiveHls {
  private readonly live = new Map<string, LivePackager>();

  set(playbackId: string, packager: LivePackager): void {
    this.live.set(playbackId, packager);
  }

  /** Only the session that registered leaves: a successor of the same stream may already be here. */
  delete(playbackId: string, packager: LivePackager): void {
    if (this.live.get(playbackId) === packager) this.live.delete(playbackId);
  }

  get(playbackId: string): LivePackager | undefined {
    return this.live.get(playbackId);
  }

  get size(): number {
    return this.live.size;
  }
}
