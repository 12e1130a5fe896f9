/** What one output of the live pipeline is. */
export interface Rendition {
  /** Folder and variant index: `0`, `1`, … */
  index: number;
  /** The profile name, or `source` for passthrough. */
  name: string;
  /** null: copy the source as it is. */
  encode: { width: number; height: number; fps: number; bitrate: number; gopFrames: number } | null;
  /** The source's video track it packages as sent (an encoder's ladder); undefined: the default track. */
  track?: number;
}

/** A video track of a publish, as its decoder configuration describes it. */
export interface SourceTrack {
  /** 0: the default track; others: the tracks of an encoder's own ladder (multitrack). */
  id: number;
  /** The FourCC of its codec (`avc1`, `hvc1`, `av01`); undefined before its configuration came. */
  codec?: string;
  width?: number;
  height?: number;
}
