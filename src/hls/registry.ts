import type { LivePackager } from "./packager";

/**
 * The packagers of the sessions live on this node, by playback id: what the HLS routes answer
 * from without touching the database or the disk. A session registers when it starts and
 * leaves when it ends (suspend and delete end it), so a playback id found here is live now.
 */
export class LiveHls {
  private readonly live = new Map<string, LivePackager>();
  private readonly thumbnails = new Map<LivePackager, () => Promise<void>>();

  /** `freshThumbnail`: brings the session's thumbnail up to date when its run does not keep it so. */
  set(playbackId: string, packager: LivePackager, freshThumbnail?: () => Promise<void>): void {
    this.live.set(playbackId, packager);
    if (freshThumbnail) this.thumbnails.set(packager, freshThumbnail);
  }

  /** Resolves once the live stream's thumbnail file is as fresh as its session makes it. */
  async freshThumbnail(playbackId: string): Promise<void> {
    const packager = this.live.get(playbackId);
    const fresh = packager ? this.thumbnails.get(packager) : undefined;
    await fresh?.();
  }

  /** Only the session that registered leaves: a successor of the same stream may already be here. */
  delete(playbackId: string, packager: LivePackager): void {
    if (this.live.get(playbackId) === packager) this.live.delete(playbackId);
    this.thumbnails.delete(packager);
  }

  get(playbackId: string): LivePackager | undefined {
    return this.live.get(playbackId);
  }

  get size(): number {
    return this.live.size;
  }
}
