// The init segment of a fragmented MP4 (ISO/IEC 14496-12 8.8): ftyp and a moov whose tracks
// have no samples of their own (empty stts/stsc/stsz/stco) and an mvex saying that fragments
// follow. What a decoder needs before the first fragment is here: each track's timescale, kind
// and sample entry.

import { box, fourcc, fullBox, u16, u32, zeros } from "./boxes";
import { sampleEntry } from "./sampleEntry";
import type { Mp4Track } from "./track";

/** The movie's own timescale: it times nothing here (durations are 0, fragments carry the time). */
const MOVIE_TIMESCALE = 1000;

/** The identity matrix of tkhd and mvhd (16.16 and 2.30 fixed point). */
const MATRIX = Buffer.concat([u32(0x0001_0000), u32(0), u32(0), u32(0), u32(0x0001_0000), u32(0), u32(0), u32(0), u32(0x4000_0000)]);

/** ftyp + moov for these tracks, in this order. */
export function initSegment(tracks: readonly Mp4Track[]): Buffer {
  if (tracks.length === 0) throw new RangeError("an init segment needs at least one track");
  const ids = new Set(tracks.map((t) => t.id));
  if (ids.size !== tracks.length || [...ids].some((id) => !Number.isInteger(id) || id < 1)) throw new RangeError("track ids are distinct integers from 1");
  const moov = box("moov", mvhd(Math.max(...ids) + 1), ...tracks.map(trak), box("mvex", ...tracks.map(trex)));
  return Buffer.concat([ftyp(tracks), moov]);
}

function ftyp(tracks: readonly Mp4Track[]): Buffer {
  // iso6 for the tfdt version 1 and signed composition offsets of the fragments; not cmfc, as a
  // CMAF track file holds one track and this one may hold several.
  const brands = ["isom", "iso6", "mp41"];
  if (tracks.some((t) => t.codec === "av01")) brands.push("av01");
  return box("ftyp", fourcc("isom"), u32(0x200), ...brands.map(fourcc));
}

function mvhd(nextTrackId: number): Buffer {
  return fullBox(
    "mvhd",
    0,
    0,
    u32(0), // creation_time
    u32(0), // modification_time
    u32(MOVIE_TIMESCALE),
    u32(0), // duration: unknown, the fragments go on
    u32(0x0001_0000), // rate 1.0
    u16(0x0100), // volume 1.0
    zeros(10),
    MATRIX,
    zeros(24), // pre_defined
    u32(nextTrackId),
  );
}

function trak(track: Mp4Track): Buffer {
  return box("trak", tkhd(track), box("mdia", mdhd(track.timescale), hdlr(track), minf(track)));
}

function tkhd(track: Mp4Track): Buffer {
  const video = track.kind === "video";
  return fullBox(
    "tkhd",
    0,
    0x000003, // enabled, in the movie
    u32(0),
    u32(0),
    u32(track.id),
    u32(0),
    u32(0), // duration
    zeros(8),
    u16(0), // layer
    u16(0), // alternate_group
    u16(video ? 0 : 0x0100), // volume: audio 1.0
    u16(0),
    MATRIX,
    u32(video ? track.width * 0x1_0000 : 0), // 16.16
    u32(video ? track.height * 0x1_0000 : 0),
  );
}

function mdhd(timescale: number): Buffer {
  if (!Number.isInteger(timescale) || timescale < 1) throw new RangeError(`a track timescale of ${timescale}`);
  // Language "und" packed as three 5-bit letters (ISO 639-2/T, each minus 0x60).
  const und = (("u".charCodeAt(0) - 0x60) << 10) | (("n".charCodeAt(0) - 0x60) << 5) | ("d".charCodeAt(0) - 0x60);
  return fullBox("mdhd", 0, 0, u32(0), u32(0), u32(timescale), u32(0), u16(und), u16(0));
}

function hdlr(track: Mp4Track): Buffer {
  const video = track.kind === "video";
  const name = Buffer.from(video ? "VideoHandler\0" : "SoundHandler\0", "latin1");
  return fullBox("hdlr", 0, 0, u32(0), fourcc(video ? "vide" : "soun"), zeros(12), name);
}

function minf(track: Mp4Track): Buffer {
  const header = track.kind === "video" ? fullBox("vmhd", 0, 1, zeros(8)) : fullBox("smhd", 0, 0, zeros(4));
  // One data reference, flag 1: the media is in this same file.
  const dinf = box("dinf", fullBox("dref", 0, 0, u32(1), fullBox("url ", 0, 1)));
  const stbl = box(
    "stbl",
    fullBox("stsd", 0, 0, u32(1), sampleEntry(track)),
    fullBox("stts", 0, 0, u32(0)),
    fullBox("stsc", 0, 0, u32(0)),
    fullBox("stsz", 0, 0, u32(0), u32(0)),
    fullBox("stco", 0, 0, u32(0)),
  );
  return box("minf", header, dinf, stbl);
}

/** The fragments' defaults for a track: none, each trun states its samples in full. */
function trex(track: Mp4Track): Buffer {
  return fullBox("trex", 0, 0, u32(track.id), u32(1), u32(0), u32(0), u32(0));
}
