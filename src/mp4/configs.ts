// Decoder configurations as a publisher sends them, turned into the payloads the sample entries
// carry. Most go in as they came (avcC, hvcC, av1C, the AudioSpecificConfig); two do not:
// - VP8/VP9: Enhanced RTMP sends a VPCodecConfigurationRecord, but the vpcC box is a full box
//   (version 1, flags 0) around that record, and some senders (ffmpeg's FLV muxer among them)
//   send the full box's version and flags too. Both are accepted, told apart by the record's own
//   length field.
// - Opus: Enhanced RTMP sends the OpusHead identification header of RFC 7845 5.1 (little-endian,
//   with its magic); the dOps box of "Encapsulation of Opus in ISO Base Media File Format" holds
//   the same fields big-endian, version 0, without the magic.

/** The VPCodecConfigurationRecord (profile, level, bit depth, …) without a full box header. */
export function vpcRecord(config: Buffer): Buffer {
  const withHeader = config.length >= 12 && config[0] === 1 && config.readUIntBE(1, 3) === 0 && 12 + config.readUInt16BE(10) === config.length;
  if (withHeader) return config.subarray(4);
  if (config.length >= 8 && 8 + config.readUInt16BE(6) === config.length) return config;
  throw new RangeError(`a VP codec configuration record of ${config.length} bytes whose length field disagrees with it`);
}

const OPUS_HEAD = Buffer.from("OpusHead", "latin1");

/** The dOps payload from an OpusHead (converted) or from a dOps payload (as it is). */
export function opusDops(config: Buffer): Buffer {
  if (config.subarray(0, 8).equals(OPUS_HEAD)) return dopsFromOpusHead(config);
  if (config.length >= 11 && config[0] === 0) return config;
  throw new RangeError("an Opus configuration that is neither an OpusHead nor a dOps payload");
}

function dopsFromOpusHead(head: Buffer): Buffer {
  if (head.length < 19) throw new RangeError(`an OpusHead of ${head.length} bytes: it has at least 19`);
  const channels = head[9]!;
  const family = head[18]!;
  const table = family === 0 ? Buffer.alloc(0) : head.subarray(19, 21 + channels);
  if (family !== 0 && table.length !== 2 + channels) throw new RangeError(`an OpusHead of mapping family ${family} without its channel mapping table`);
  const fixed = Buffer.alloc(11);
  fixed.writeUInt8(0, 0); // dOps version
  fixed.writeUInt8(channels, 1);
  fixed.writeUInt16BE(head.readUInt16LE(10), 2); // pre-skip
  fixed.writeUInt32BE(head.readUInt32LE(12), 4); // input sample rate
  fixed.writeInt16BE(head.readInt16LE(16), 8); // output gain, Q7.8 dB
  fixed.writeUInt8(family, 10);
  // The table (stream count, coupled count, one mapping byte per channel) is bytes either way.
  return Buffer.concat([fixed, table]);
}
