// The transcode's speed against its source: media seconds the pipeline wrote per media second
// the publisher sent, over a trailing window. Measured against the source's own clock rather
// than the wall clock, so a publisher whose uplink is slow is not taken for a slow transcode.

interface Sample {
  at: number;
  /** Media seconds received from the publisher so far (its tags' clock). */
  input: number;
  /** Media seconds the pipeline has written so far (ffmpeg's out_time). */
  output: number;
}

export class SpeedMeter {
  private readonly samples: Sample[] = [];

  constructor(private readonly windowMs: number) {}

  /** A new pipeline run starts its output clock at 0: measure it afresh. */
  reset(): void {
    this.samples.length = 0;
  }

  add(at: number, input: number, output: number): void {
    this.samples.push({ at, input, output });
    while (this.samples.length > 2 && at - this.samples[1]!.at >= this.windowMs) this.samples.shift();
  }

  /** How much of the window the samples span, ms. */
  span(): number {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    return first && last ? last.at - first.at : 0;
  }

  /** Output over input media time across the window; undefined until the source has advanced. */
  ratio(): number | undefined {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last) return undefined;
    const input = last.input - first.input;
    if (input <= 0) return undefined;
    return (last.output - first.output) / input;
  }
}
