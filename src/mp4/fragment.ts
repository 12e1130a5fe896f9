// One movie fragment (ISO/IEC 14496-12 8.8.4): a moof describing a run of samples per track and
// the mdat holding them, trafs and their sample data in the same order. Every sample is stated in
// full in its trun (duration, size, flags, composition offset), so the fragment needs nothing of
// the init's trex defaults, and default-base-is-moof makes the data offsets relative to the moof
// itself: the fragment can be cut out and served (an LL-HLS part) as it is.

import { box, fullBox, i32, u32, u64 } from "./boxes";

export interface Mp4Sample {
  /** In the track's timescale, until the next sample's decode time. */
  duration: number;
  /** In bytes: `data.length`. */
  size: number;
  /** Presentation time minus decode time, in the track's timescale; negative is allowed. */
  compositionOffset: number;
  /** A sync sample: decoding can start here. */
  keyframe: boolean;
  data: Buffer;
}

export interface Mp4FragmentPart {
  trackId: number;
  /** The first sample's decode time, in the track's timescale. */
  baseDecodeTime: number;
  samples: Mp4Sample[];
}

/** tfhd: default-base-is-moof, nothing else (no defaults, no explicit base offset). */
const TFHD_DEFAULT_BASE_IS_MOOF = 0x02_0000;

/** trun: data-offset, then per sample duration, size, flags and composition time offset. */
const TRUN_FLAGS = 0x000001 | 0x000100 | 0x000200 | 0x000400 | 0x000800;

/** The mdat's header: the size and the type, 32 bits each. */
const MDAT_HEADER = 8;

/** Sample flags (8.8.3.1): a sync sample depends on no other; any other sample does, and is not sync. */
export const SYNC_SAMPLE_FLAGS = 0x0200_0000;
export const NON_SYNC_SAMPLE_FLAGS = 0x0101_0000;

/** moof + mdat for these parts, the mdat holding each part's samples in turn. */
export function fragment(sequence: number, parts: readonly Mp4FragmentPart[]): Buffer {
  if (parts.length === 0) throw new RangeError("a fragment holds at least one track's samples");
  for (const part of parts) checkPart(part);
  if (new Set(parts.map((p) => p.trackId)).size !== parts.length) throw new RangeError("a fragment holds one part per track");
  const mdat = box("mdat", ...parts.flatMap((p) => p.samples.map((s) => s.data)));
  // The trun's data offsets count from the moof's first byte, so they depend on the moof's size,
  // which does not depend on their values: build it once to measure, then with the offsets.
  const size = moof(sequence, parts, () => 0).length;
  let at = size + MDAT_HEADER;
  const starts = parts.map((p) => {
    const start = at;
    at += p.samples.reduce((n, s) => n + s.size, 0);
    return start;
  });
  return Buffer.concat([moof(sequence, parts, (i) => starts[i]!), mdat]);
}

function checkPart(part: Mp4FragmentPart): void {
  if (part.samples.length === 0) throw new RangeError(`track ${part.trackId}: a part without samples`);
  for (const s of part.samples) {
    if (s.size !== s.data.length) throw new RangeError(`track ${part.trackId}: a sample of size ${s.size} holding ${s.data.length} bytes`);
  }
}

function moof(sequence: number, parts: readonly Mp4FragmentPart[], dataOffset: (part: number) => number): Buffer {
  return box("moof", fullBox("mfhd", 0, 0, u32(sequence)), ...parts.map((p, i) => traf(p, dataOffset(i))));
}

function traf(part: Mp4FragmentPart, dataOffset: number): Buffer {
  const tfhd = fullBox("tfhd", 0, TFHD_DEFAULT_BASE_IS_MOOF, u32(part.trackId));
  // Version 1: 64-bit decode times, which a 90 kHz clock needs after 13 hours.
  const tfdt = fullBox("tfdt", 1, 0, u64(part.baseDecodeTime));
  return box("traf", tfhd, tfdt, trun(part.samples, dataOffset));
}

function trun(samples: readonly Mp4Sample[], dataOffset: number): Buffer {
  const fields = Buffer.alloc(samples.length * 16);
  samples.forEach((s, i) => {
    fields.writeUInt32BE(s.duration, i * 16);
    fields.writeUInt32BE(s.size, i * 16 + 4);
    fields.writeUInt32BE(s.keyframe ? SYNC_SAMPLE_FLAGS : NON_SYNC_SAMPLE_FLAGS, i * 16 + 8);
    // Version 1: signed offsets, so B-frames need no edit list to start presentation at 0.
    fields.writeInt32BE(s.compositionOffset, i * 16 + 12);
  });
  return fullBox("trun", 1, TRUN_FLAGS, u32(samples.length), i32(dataOffset), fields);
}
