//! Acme Formant's engine in Rust: text to speech-like audio by source-filter (formant) synthesis.
//!
//! Each letter becomes a segment (vowel, sonorant, fricative, stop, pause) with three formant
//! targets, a duration and the amplitudes of a glottal pulse train and of seeded noise; the voiced
//! source runs through a cascade of three resonators whose frequencies glide between segments
//! (Klatt's cascade synthesiser, much simplified), fricatives through one more resonator at their own
//! centre. The same text, voice, rate and seed give the same samples. Nothing here knows VoxArena.

use std::f64::consts::PI;

pub const RATE: u32 = 16_000;
const NEUTRAL: [f64; 3] = [500.0, 1500.0, 2500.0];
const BANDWIDTHS: [f64; 3] = [80.0, 100.0, 150.0];
const FRICATIVE_BANDWIDTH: f64 = 1200.0;

/// A voice: pitch at the start of an utterance (declining to 80 %) and a vocal-tract scale.
#[derive(Clone, Copy)]
pub struct VoiceShape {
    pub f0: f64,
    pub formant_scale: f64,
}

#[derive(Clone, Copy)]
struct Segment {
    formants: [f64; 3],
    seconds: f64,
    voicing: f64,
    noise: f64,
    noise_centre: f64, // Hz; 0: aspiration through the formants
}

fn seg(formants: [f64; 3], seconds: f64, voicing: f64, noise: f64, noise_centre: f64) -> Segment {
    Segment { formants, seconds, voicing, noise, noise_centre }
}

fn letter(ch: char, out: &mut Vec<Segment>) {
    let vowel = |f| seg(f, 0.11, 1.0, 0.0, 0.0);
    let sonorant = |f| seg(f, 0.07, 0.6, 0.0, 0.0);
    let fricative = |centre, voiced: bool| seg(NEUTRAL, 0.09, if voiced { 0.35 } else { 0.0 }, 0.5, centre);
    let mut stop = |centre: f64, voiced: bool| {
        out.push(seg(NEUTRAL, 0.05, if voiced { 0.15 } else { 0.0 }, 0.0, 0.0)); // closure
        seg(NEUTRAL, 0.02, 0.0, 0.8, centre) // burst
    };
    let s = match ch {
        'a' => vowel([730.0, 1090.0, 2440.0]),
        'e' => vowel([530.0, 1840.0, 2480.0]),
        'i' | 'y' => vowel([270.0, 2290.0, 3010.0]),
        'o' => vowel([570.0, 840.0, 2410.0]),
        'u' => vowel([300.0, 870.0, 2240.0]),
        'l' => sonorant([360.0, 1300.0, 2700.0]),
        'r' => sonorant([420.0, 1300.0, 1600.0]),
        'w' => sonorant([300.0, 610.0, 2200.0]),
        'j' => sonorant([280.0, 2100.0, 2900.0]),
        'm' => sonorant([280.0, 900.0, 2200.0]),
        'n' => sonorant([280.0, 1700.0, 2600.0]),
        's' => fricative(5000.0, false),
        'z' => fricative(5000.0, true),
        'f' => fricative(3500.0, false),
        'v' => fricative(3500.0, true),
        'h' => fricative(0.0, false),
        'p' => stop(1500.0, false),
        'b' => stop(1500.0, true),
        't' => stop(4000.0, false),
        'd' => stop(4000.0, true),
        'k' | 'c' | 'q' => stop(2500.0, false),
        'g' => stop(2500.0, true),
        'x' => {
            out.push(seg(NEUTRAL, 0.05, 0.0, 0.0, 0.0));
            out.push(seg(NEUTRAL, 0.02, 0.0, 0.8, 2500.0));
            fricative(5000.0, false)
        }
        '.' | ',' | ';' | ':' | '!' | '?' => seg(NEUTRAL, 0.18, 0.0, 0.0, 0.0),
        _ => seg(NEUTRAL, 0.05, 0.0, 0.0, 0.0),
    };
    out.push(s);
}

fn segments(text: &str) -> Vec<Segment> {
    let mut out = vec![seg(NEUTRAL, 0.05, 0.0, 0.0, 0.0)];
    for ch in text.to_lowercase().chars() {
        letter(ch, &mut out);
    }
    out.push(seg(NEUTRAL, 0.05, 0.0, 0.0, 0.0));
    out
}

/// SplitMix64: a small seeded generator, so the same seed gives the same noise on every platform.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        (-2.0 * u1.ln()).sqrt() * (2.0 * PI * self.uniform()).cos()
    }
}

/// A second-order resonator with a per-sample centre frequency (Klatt 1980: unity gain at DC).
fn resonate(x: &[f64], freq: &[f64], bandwidth: f64) -> Vec<f64> {
    let rate = f64::from(RATE);
    let c = -(-2.0 * PI * bandwidth / rate).exp();
    let r = (-PI * bandwidth / rate).exp();
    let (mut y1, mut y2) = (0.0, 0.0);
    x.iter()
        .zip(freq)
        .map(|(xi, f)| {
            let b = 2.0 * r * (2.0 * PI * f / rate).cos();
            let y = (1.0 - b - c) * xi + b * y1 + c * y2;
            y2 = y1;
            y1 = y;
            y
        })
        .collect()
}

/// A moving Hann-window average over 8 ms: amplitude steps become ramps, segments join without clicks.
fn smooth(track: &[f64]) -> Vec<f64> {
    let n = ((0.008 * f64::from(RATE)) as usize).max(3);
    let window: Vec<f64> = (0..n).map(|k| 0.5 - 0.5 * (2.0 * PI * k as f64 / (n - 1) as f64).cos()).collect();
    let total: f64 = window.iter().sum();
    let half = n / 2;
    (0..track.len())
        .map(|i| {
            let mut acc = 0.0;
            for (k, w) in window.iter().enumerate() {
                let j = i as isize + k as isize - half as isize;
                if j >= 0 && (j as usize) < track.len() {
                    acc += w * track[j as usize];
                }
            }
            acc / total
        })
        .collect()
}

/// Linear interpolation of the knots (xs ascending) at 0..n, held flat beyond the ends, in one pass.
fn interpolate(n: usize, xs: &[f64], ys: &[f64]) -> Vec<f64> {
    let mut k = 0;
    (0..n)
        .map(|t| {
            let t = t as f64;
            while k + 1 < xs.len() && t > xs[k + 1] {
                k += 1;
            }
            if t <= xs[0] {
                ys[0]
            } else if k + 1 >= xs.len() {
                ys[ys.len() - 1]
            } else {
                ys[k] + (t - xs[k]) / (xs[k + 1] - xs[k]) * (ys[k + 1] - ys[k])
            }
        })
        .collect()
}

fn peak(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// Float samples at `RATE`, peak 0.5, for `text` in `voice` at speaking `rate` (1 = normal).
pub fn synthesize(text: &str, voice: VoiceShape, rate: f64, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let segs = segments(text);
    let lengths: Vec<usize> = segs.iter().map(|s| ((s.seconds / rate * f64::from(RATE)).round() as usize).max(1)).collect();
    let n: usize = lengths.iter().sum();
    let mut centres = Vec::with_capacity(segs.len());
    let mut per_sample = Vec::with_capacity(n);
    let mut start = 0;
    for (k, len) in lengths.iter().enumerate() {
        centres.push(start as f64 + *len as f64 / 2.0);
        per_sample.extend(std::iter::repeat(k).take(*len));
        start += len;
    }
    let track = |f: &dyn Fn(&Segment) -> f64| -> Vec<f64> { smooth(&per_sample.iter().map(|&k| f(&segs[k])).collect::<Vec<_>>()) };
    let voicing = track(&|s| s.voicing);
    let aspiration = track(&|s| if s.noise_centre == 0.0 { s.noise } else { 0.0 });
    let frication = track(&|s| if s.noise_centre > 0.0 { s.noise } else { 0.0 });
    let centre: Vec<f64> = per_sample.iter().map(|&k| if segs[k].noise_centre > 0.0 { segs[k].noise_centre } else { NEUTRAL[2] }).collect();
    // Pitch: declination to 80 %, a seeded slow drift of a few per cent, a rise at the end of a question.
    let knots = (n / (RATE as usize / 5)).max(2);
    let knot_x: Vec<f64> = (0..knots).map(|k| k as f64 * n as f64 / (knots - 1) as f64).collect();
    let knot_y: Vec<f64> = (0..knots).map(|_| 0.03 * rng.normal()).collect();
    let drift = interpolate(n, &knot_x, &knot_y);
    let question = text.trim_end().ends_with('?');
    let (mut phase, mut prev_flow, mut glottal) = (0.0f64, 0.0f64, Vec::with_capacity(n));
    for t in 0..n {
        let tf = t as f64;
        let mut f0 = voice.f0 * (1.0 - 0.2 * tf / n as f64) * (1.0 + drift[t]);
        if question {
            f0 *= 1.0 + 0.3 * ((tf - (n as f64 - 0.3 * f64::from(RATE))) / (0.3 * f64::from(RATE))).clamp(0.0, 1.0);
        }
        phase = (phase + f0 / f64::from(RATE)) % 1.0;
        let flow = if phase < 0.6 { 0.5 * (1.0 - (2.0 * PI * phase / 0.6).cos()) } else { 0.0 };
        glottal.push(flow - prev_flow); // differentiated flow: lip radiation
        prev_flow = flow;
    }
    let g = peak(&glottal).max(f64::MIN_POSITIVE);
    let noise: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let mut x: Vec<f64> = (0..n).map(|t| voicing[t] * glottal[t] / g + 0.3 * aspiration[t] * noise[t]).collect();
    for (k, bandwidth) in BANDWIDTHS.iter().enumerate() {
        let targets: Vec<f64> = segs.iter().map(|s| s.formants[k] * voice.formant_scale).collect();
        let formant = interpolate(n, &centres, &targets);
        x = resonate(&x, &formant, *bandwidth);
    }
    let tilted: Vec<f64> = (0..n).map(|t| noise[t] - if t > 0 { noise[t - 1] } else { 0.0 }).collect();
    let hiss = resonate(&tilted, &centre, FRICATIVE_BANDWIDTH);
    let mean = hiss.iter().sum::<f64>() / n as f64;
    let std = (hiss.iter().map(|h| (h - mean).powi(2)).sum::<f64>() / n as f64).sqrt().max(f64::MIN_POSITIVE);
    let xp = peak(&x).max(f64::MIN_POSITIVE);
    let y: Vec<f64> = (0..n).map(|t| x[t] / xp + 0.12 * frication[t] * hiss[t] / std).collect();
    let yp = peak(&y);
    y.iter().map(|v| if yp > 0.0 { (0.5 * v / yp) as f32 } else { 0.0 }).collect()
}
