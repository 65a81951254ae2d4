//! acme-formant-rs: a VoxArena generator (TTS) in Rust, from the .proto alone.

use std::collections::HashMap;
use std::process::ExitCode;

use acme_rs::contract::{self, invalid, Stopwatch};
use acme_rs::formant::{self, VoiceShape};
use acme_rs::pb::generator_service_server::{GeneratorService, GeneratorServiceServer};
use acme_rs::pb::{self, GeneratorInfo, GetInfoRequest, SynthesizeRequest, SynthesizeResponse, Task};
use tonic::{Request, Response, Status};

const NAME: &str = "acme-formant-rs";
const SCOPE: &str = "synthesis: letters to segments, source-filter synthesis";
const MAX_TEXT_CHARS: usize = 1000;
const VOICES: [(&str, &str, VoiceShape); 2] = [
    ("low", "pitch 115 Hz falling to 92 Hz", VoiceShape { f0: 115.0, formant_scale: 1.0 }),
    ("high", "pitch 210 Hz, formants 15 % higher", VoiceShape { f0: 210.0, formant_scale: 1.15 }),
];

#[derive(Default)]
struct AcmeFormant;

fn options() -> Vec<pb::OptionSpec> {
    vec![pb::OptionSpec {
        name: "rate".into(),
        description: "speaking rate, 0.5 (slow) to 2.0 (fast)".into(),
        default_value: "1.0".into(),
        ..Default::default()
    }]
}

fn info() -> GeneratorInfo {
    GeneratorInfo {
        model: Some(pb::ModelInfo {
            name: NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            licence: "Apache-2.0".into(),
            weights_sha256: String::new(), // a rule-based engine: no weights
            parameter_count: None,
            native_sample_rate: formant::RATE,
            deterministic: true,
            timing_scope: SCOPE.into(),
            metadata: HashMap::from([("language".into(), "rust".into())]),
            ..Default::default()
        }),
        family: pb::GeneratorFamily::RuleBasedFormant as i32,
        tasks: vec![Task::Tts as i32],
        voices: VOICES
            .iter()
            .map(|(name, description, _)| pb::VoiceSpec {
                name: (*name).into(),
                language: "en-US".into(),
                description: (*description).into(),
                sample_rate: 0,
                ..Default::default()
            })
            .collect(),
        options: options(),
        max_text_chars: MAX_TEXT_CHARS as u32,
        max_source_seconds: 0.0, // takes no audio
        min_source_seconds: 0.0,
        ..Default::default() // and whatever a later contract version adds
    }
}

/// The request checked as the contract says, in its order: id, task, inputs, voice, options.
fn checked(req: &SynthesizeRequest) -> Result<(&'static str, VoiceShape, f64), Status> {
    let rid = req.request_id.as_str();
    contract::require_request_id(rid)?;
    if req.task != Task::Tts as i32 {
        let task = Task::try_from(req.task).map(|t| t.as_str_name().to_string()).unwrap_or(req.task.to_string());
        return Err(Status::unimplemented(format!("{rid}: task {task} is not supported by {NAME}; supported: TTS")));
    }
    if req.text.is_empty() {
        return Err(invalid(rid, "TTS needs text, got empty text"));
    }
    let chars = req.text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(invalid(rid, format!("text of {chars} characters exceeds max_text_chars {MAX_TEXT_CHARS}")));
    }
    let (name, _, shape) = match req.voice.as_str() {
        "" => VOICES[0],
        v => *VOICES.iter().find(|(name, _, _)| *name == v).ok_or_else(|| {
            Status::unimplemented(format!("{rid}: voice {v:?} is not offered by {NAME}; voices: low, high"))
        })?,
    };
    contract::require_declared_options(rid, &req.parameters, &options())?;
    let rate = match req.parameters.get("rate") {
        None => 1.0,
        Some(value) => match value.parse::<f64>() {
            Ok(r) if (0.5..=2.0).contains(&r) => r,
            _ => return Err(invalid(rid, format!("option rate={value:?} is not a number in [0.5, 2.0]"))),
        },
    };
    Ok((name, shape, rate))
}

#[tonic::async_trait]
impl GeneratorService for AcmeFormant {
    async fn get_info(&self, _: Request<GetInfoRequest>) -> Result<Response<GeneratorInfo>, Status> {
        Ok(Response::new(info()))
    }

    async fn synthesize(&self, request: Request<SynthesizeRequest>) -> Result<Response<SynthesizeResponse>, Status> {
        let req = request.into_inner();
        let (voice, shape, rate) = checked(&req)?;
        let (text, seed) = (req.text.clone(), req.seed);
        // The engine is CPU-bound: off the async threads, so slow calls never stall the others.
        let (samples, timing) = tokio::task::spawn_blocking(move || {
            let watch = Stopwatch::start();
            let samples = formant::synthesize(&text, shape, rate, seed);
            (samples, watch.timing(SCOPE))
        })
        .await
        .map_err(|e| Status::internal(format!("{}: synthesis failed: {e}", req.request_id)))?;
        Ok(Response::new(SynthesizeResponse {
            request_id: req.request_id,
            seed: req.seed,
            audio: Some(contract::encode(&samples, formant::RATE)),
            timing: Some(timing),
            voice: voice.into(),
            ..Default::default()
        }))
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    acme_rs::serve_main!(NAME, GeneratorServiceServer<AcmeFormant>, AcmeFormant)
}
