// What a rendition contains, for the master playlist's CODECS and RESOLUTION.

/**
 * `avc1.PPCCLL` from the first H.264 SPS in an MPEG-TS segment: profile_idc, the constraint
 * flags and level_idc are the three bytes after the SPS NAL header. A keyframe's SPS sits at
 * the start of its PES, inside one TS packet, so a byte scan finds it whole.
 */
export function avcCodecFromSegment(ts: Buffer): string | undefined {
  for (let i = 0; i + 7 < ts.length; i++) {
    if (ts[i] === 0 && ts[i + 1] === 0 && ts[i + 2] === 1 && (ts[i + 3]! & 0x1f) === 7 && (ts[i + 3]! & 0x80) === 0) {
      const profile = ts[i + 4]!;
      if (![66, 77, 88, 100, 110, 122, 244, 44].includes(profile)) continue;
      const hex = (b: number) => b.toString(16).padStart(2, "0");
      return `avc1.${hex(profile)}${hex(ts[i + 5]!)}${hex(ts[i + 6]!)}`;
    }
  }
  return undefined;
}

export interface InputStreams {
  video?: { codec: string; profile?: string; width: number; height: number; fps?: number };
  audio?: { codec: string; profile?: string };
}

/** The input's streams, from the `Input #0` section of ffmpeg's log at level info. */
export function parseInputStreams(log: string): InputStreams {
  const section = log.split(/^Output #0|^Stream mapping:/m)[0] ?? "";
  const out: InputStreams = {};
  for (const line of section.split("\n")) {
    const m = /Stream #0:\d+.*?: (Video|Audio): (\w+)(?: \(([^)]*)\))?(.*)$/.exec(line);
    if (!m) continue;
    const [, kind, codec, profile, rest] = m;
    if (kind === "Video" && !out.video) {
      const size = /, (\d{2,5})x(\d{2,5})/.exec(rest!);
      const fps = /, ([\d.]+) fps/.exec(rest!);
      if (size) out.video = { codec: codec!, profile, width: Number(size[1]), height: Number(size[2]), fps: fps ? Number(fps[1]) : undefined };
    } else if (kind === "Audio" && !out.audio) {
      out.audio = { codec: codec!, profile };
    }
  }
  return out;
}

/** RFC 6381 codec string of an audio stream HLS can carry, if we know it. */
export function audioCodecString(audio: InputStreams["audio"]): string | undefined {
  if (!audio) return undefined;
  if (audio.codec === "aac") return audio.profile?.startsWith("HE-AACv2") ? "mp4a.40.29" : audio.profile?.startsWith("HE-AAC") ? "mp4a.40.5" : "mp4a.40.2";
  if (audio.codec === "mp3") return "mp4a.40.34";
  if (audio.codec === "ac3") return "ac-3";
  return undefined;
}
