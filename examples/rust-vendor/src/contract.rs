//! The contract's rules, as the .proto comments state them, in one place for both services.
//!
//! - `Audio` (common.proto): PCM_S16LE or PCM_F32LE, mono, 1000..384000 Hz, a whole number of
//!   samples, not empty, float samples finite and within +-100 (full scale is 1.0); a clip that breaks
//!   one is INVALID_ARGUMENT naming the field and the reason.
//! - every request: a non-empty `request_id`, echoed in the response and named in every error.
//! - `parameters`: only declared options; any other name is INVALID_ARGUMENT.
//! - `Timing`: the native call's wall time, start and end, the declared scope.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use tonic::Status;

use crate::pb;

pub const MIN_SAMPLE_RATE: u32 = 1000;
pub const MAX_SAMPLE_RATE: u32 = 384_000;
pub const MAX_FLOAT_MAGNITUDE: f32 = 100.0;
/// The largest message the services accept (64 MiB, as the reference services).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Mono samples (full scale 1.0) at a rate.
pub struct Clip {
    pub samples: Vec<f32>,
    pub rate: u32,
}

impl Clip {
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / f64::from(self.rate)
    }
}

/// INVALID_ARGUMENT naming the request: "ID: reason".
pub fn invalid(request_id: &str, reason: impl std::fmt::Display) -> Status {
    Status::invalid_argument(format!("{request_id}: {reason}"))
}

pub fn require_request_id(request_id: &str) -> Result<(), Status> {
    if request_id.is_empty() {
        return Err(Status::invalid_argument("request_id is empty"));
    }
    Ok(())
}

/// Every parameter name must be a declared option.
pub fn require_declared_options(
    request_id: &str,
    parameters: &HashMap<String, String>,
    declared: &[pb::OptionSpec],
) -> Result<(), Status> {
    let mut unknown: Vec<&String> = parameters
        .keys()
        .filter(|k| !declared.iter().any(|o| &o.name == *k))
        .collect();
    unknown.sort();
    if let Some(name) = unknown.first() {
        let names: Vec<&str> = declared.iter().map(|o| o.name.as_str()).collect();
        return Err(invalid(request_id, format!("unknown option {name:?}; options: {}", names.join(", "))));
    }
    Ok(())
}

/// Decodes and validates an `Audio` field; `what` names it in the error.
pub fn decode(request_id: &str, what: &str, audio: Option<&pb::Audio>, max_seconds: f64) -> Result<Clip, Status> {
    let audio = audio.ok_or_else(|| invalid(request_id, format!("{what} is missing")))?;
    if !(MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&audio.sample_rate) {
        return Err(invalid(
            request_id,
            format!("{what}: sample_rate {} Hz is outside [{MIN_SAMPLE_RATE}, {MAX_SAMPLE_RATE}] Hz", audio.sample_rate),
        ));
    }
    if audio.channels != 1 {
        return Err(invalid(request_id, format!("{what}: expected mono audio, got {} channels", audio.channels)));
    }
    let width = match pb::AudioEncoding::try_from(audio.encoding) {
        Ok(pb::AudioEncoding::PcmS16le) => 2,
        Ok(pb::AudioEncoding::PcmF32le) => 4,
        _ => return Err(invalid(request_id, format!("{what}: unknown encoding {}", audio.encoding))),
    };
    if audio.data.len() % width != 0 {
        return Err(invalid(
            request_id,
            format!("{what}: {} bytes is not a whole number of {width}-byte samples", audio.data.len()),
        ));
    }
    let count = audio.data.len() / width;
    if count == 0 {
        return Err(invalid(request_id, format!("{what}: empty audio")));
    }
    let seconds = count as f64 / f64::from(audio.sample_rate);
    if max_seconds > 0.0 && seconds > max_seconds {
        return Err(invalid(request_id, format!("{what}: {seconds:.2} s is longer than the {max_seconds} s accepted")));
    }
    let samples: Vec<f32> = if width == 2 {
        audio.data.chunks_exact(2).map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0).collect()
    } else {
        audio.data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    };
    if samples.iter().any(|x| !x.is_finite()) {
        return Err(invalid(request_id, format!("{what}: contains NaN or infinite samples")));
    }
    let peak = samples.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if peak > MAX_FLOAT_MAGNITUDE {
        return Err(invalid(
            request_id,
            format!("{what}: sample magnitude {peak} exceeds {MAX_FLOAT_MAGNITUDE} (float full scale is 1.0)"),
        ));
    }
    Ok(Clip { samples, rate: audio.sample_rate })
}

/// Float samples as an `Audio` message (PCM_F32LE, mono).
pub fn encode(samples: &[f32], rate: u32) -> pb::Audio {
    let mut data = Vec::with_capacity(samples.len() * 4);
    for x in samples {
        data.extend_from_slice(&x.to_le_bytes());
    }
    pb::Audio { data, sample_rate: rate, channels: 1, encoding: pb::AudioEncoding::PcmF32le as i32, ..Default::default() }
}

/// Times the native call: `Timing` with wall seconds, start, end and the declared scope.
pub struct Stopwatch {
    started: Instant,
    start: SystemTime,
}

impl Stopwatch {
    pub fn start() -> Self {
        Stopwatch { started: Instant::now(), start: SystemTime::now() }
    }

    pub fn timing(&self, scope: &str) -> pb::Timing {
        let wall = self.started.elapsed().as_secs_f64();
        pb::Timing {
            wall_seconds: wall,
            start: Some(prost_types::Timestamp::from(self.start)),
            end: Some(prost_types::Timestamp::from(SystemTime::now())),
            scope: scope.to_string(),
            cpu_seconds: 0.0, // "0 when the service cannot tell": std has no per-thread CPU clock
            ..Default::default()
        }
    }
}
