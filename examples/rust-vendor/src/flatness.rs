//! Acme Flatness's scorer in Rust: three spectral cues of a clip and how far they lie from natural
//! speech's, at the clip's own rate (32 ms Hann frames, half overlap).
//!
//! Per frame of the clip's active part (frames within 40 dB of its loudest), the spectral flatness:
//! the geometric over the arithmetic mean of the power spectrum. The cues: the spread of log flatness
//! over active frames (speech alternates peaky voiced frames with flatter fricatives), the log share
//! of energy at 4 kHz and above, and the mean log flatness. The score is a diagonal Gaussian log
//! density of natural speech over the cues up to a constant (0: typical speech; lower: further away),
//! with round, hand-set values: higher = more bona fide, not a likelihood ratio. Nothing here knows
//! VoxArena.

use std::f64::consts::PI;

use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// cue -> (mean, scale) for natural read speech: flatness spread, log high-band share, mean log flatness.
pub const NATURAL: [(f64, f64); 3] = [(2.0, 0.5), (-4.5, 2.0), (-5.5, 1.5)];
const ACTIVE_DB: f64 = 40.0;
const EPS: f64 = 1e-10;
/// The score of a clip with no active frame (silence): as far from speech as this model reports.
pub const FLOOR: f64 = -100.0;

fn power_frames(x: &[f32], rate: u32) -> (Vec<Vec<f64>>, usize) {
    let frame = ((0.032 * f64::from(rate)).round() as usize).max(2);
    let hop = frame / 2;
    let mut padded: Vec<f64> = x.iter().map(|v| f64::from(*v)).collect();
    if padded.len() < frame {
        padded.resize(frame, 0.0);
    }
    let window: Vec<f64> = (0..frame).map(|k| 0.5 - 0.5 * (2.0 * PI * k as f64 / (frame - 1) as f64).cos()).collect();
    let fft = FftPlanner::<f64>::new().plan_fft_forward(frame);
    let count = 1 + (padded.len() - frame) / hop;
    let frames = (0..count)
        .map(|i| {
            let mut buf: Vec<Complex<f64>> =
                (0..frame).map(|k| Complex::new(padded[i * hop + k] * window[k], 0.0)).collect();
            fft.process(&mut buf);
            buf[..frame / 2 + 1].iter().map(|c| c.norm_sqr()).collect()
        })
        .collect();
    (frames, frame)
}

/// The three cues, or None for a silent clip.
pub fn cues(x: &[f32], rate: u32) -> Option<[f64; 3]> {
    let (power, frame) = power_frames(x, rate);
    let energy: Vec<f64> = power.iter().map(|p| p.iter().sum()).collect();
    let loudest = energy.iter().cloned().fold(0.0, f64::max);
    let floor = 10.0 * (loudest + EPS).log10() - ACTIVE_DB;
    let active: Vec<&Vec<f64>> = power
        .iter()
        .zip(&energy)
        .filter(|(_, e)| **e > EPS && 10.0 * (**e + EPS).log10() > floor)
        .map(|(p, _)| p)
        .collect();
    if active.is_empty() {
        return None;
    }
    let high_from = (4000.0 * frame as f64 / f64::from(rate)).ceil() as usize;
    let (mut high, mut total) = (0.0, 0.0);
    let log_flatness: Vec<f64> = active
        .iter()
        .map(|p| {
            let bins = p.len() as f64;
            let log_mean = p.iter().map(|v| (v + EPS).ln()).sum::<f64>() / bins;
            let mean = p.iter().map(|v| v + EPS).sum::<f64>() / bins;
            high += p.iter().skip(high_from).map(|v| v + EPS).sum::<f64>();
            total += p.iter().map(|v| v + EPS).sum::<f64>();
            log_mean - mean.ln()
        })
        .collect();
    let n = log_flatness.len() as f64;
    let mean = log_flatness.iter().sum::<f64>() / n;
    let spread = (log_flatness.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    Some([spread, (high / total + EPS).ln(), mean])
}

/// Higher = more bona fide: 0 at natural speech's typical cues, lower the further from them.
pub fn score(x: &[f32], rate: u32) -> f64 {
    match cues(x, rate) {
        None => FLOOR,
        Some(c) => {
            let d: f64 = c.iter().zip(NATURAL).map(|(v, (m, s))| ((v - m) / s).powi(2)).sum();
            (-0.5 * d).max(FLOOR)
        }
    }
}
