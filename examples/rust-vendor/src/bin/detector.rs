//! acme-flatness-rs: a VoxArena detector in Rust, from the .proto alone.

use std::collections::HashMap;
use std::process::ExitCode;

use acme_rs::contract::{self, invalid, Stopwatch};
use acme_rs::flatness;
use acme_rs::pb::detector_service_server::{DetectorService, DetectorServiceServer};
use acme_rs::pb::score_batch_item::Outcome;
use acme_rs::pb::{
    self, DetectorInfo, GetInfoRequest, ItemError, ScoreBatchItem, ScoreBatchRequest, ScoreBatchResponse,
    ScoreRequest, ScoreResponse, ScoreStreamRequest, StreamScore,
};
use tonic::{Code, Request, Response, Status};

const NAME: &str = "acme-flatness-rs";
const SCOPE: &str = "score: framewise FFT at the clip's rate, three cues, a Gaussian log density";
const MAX_BATCH: usize = 16;
const MIN_SECONDS: f64 = 0.005;
const MAX_SECONDS: f64 = 120.0;

#[derive(Default)]
struct AcmeFlatness;

fn info() -> DetectorInfo {
    DetectorInfo {
        model: Some(pb::ModelInfo {
            name: NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            licence: "Apache-2.0".into(),
            weights_sha256: String::new(), // hand-set constants (flatness::NATURAL), no trained weights
            parameter_count: Some(2 * flatness::NATURAL.len() as u64),
            native_sample_rate: 16000,
            deterministic: true,
            timing_scope: SCOPE.into(),
            metadata: HashMap::from([("language".into(), "rust".into())]),
            ..Default::default()
        }),
        family: pb::DetectorFamily::HandcraftedFrontEnd as i32,
        calibrated: false, // a one-class density with hand-set values: no likelihood ratio
        max_batch_size: MAX_BATCH as u32,
        options: vec![],
        min_seconds: MIN_SECONDS,
        max_seconds: MAX_SECONDS,
        sample_rates: vec![], // any rate: the cues are computed at the clip's own rate
        // Fields this example leaves at their defaults (segment_hop_seconds 0: no segment scores), and
        // those a later contract version adds: `..Default::default()` keeps the code compiling.
        ..Default::default()
    }
}

/// One clip: checked as the contract says, then scored (higher = more bona fide).
fn score_one(req: &ScoreRequest) -> Result<ScoreResponse, Status> {
    let rid = req.request_id.as_str();
    contract::require_request_id(rid)?;
    contract::require_declared_options(rid, &req.parameters, &[])?;
    let clip = contract::decode(rid, "audio", req.audio.as_ref(), MAX_SECONDS)?;
    if clip.seconds() < MIN_SECONDS {
        return Err(invalid(rid, format!("audio: {:.4} s is shorter than min_seconds {MIN_SECONDS}", clip.seconds())));
    }
    let watch = Stopwatch::start();
    let score = flatness::score(&clip.samples, clip.rate);
    Ok(ScoreResponse {
        request_id: req.request_id.clone(),
        score,
        is_llr: false,
        timing: Some(watch.timing(SCOPE)),
        ..Default::default() // no segment scores (want_segments is not answered: segment_hop_seconds is 0)
    })
}

#[tonic::async_trait]
impl DetectorService for AcmeFlatness {
    async fn get_info(&self, _: Request<GetInfoRequest>) -> Result<Response<DetectorInfo>, Status> {
        Ok(Response::new(info()))
    }

    async fn score(&self, request: Request<ScoreRequest>) -> Result<Response<ScoreResponse>, Status> {
        let req = request.into_inner();
        let scored = tokio::task::spawn_blocking(move || score_one(&req))
            .await
            .map_err(|e| Status::internal(format!("scoring failed: {e}")))?;
        scored.map(Response::new)
    }

    /// A bad clip fails alone (its ItemError), in request order; a batch over max_batch_size fails whole.
    async fn score_batch(&self, request: Request<ScoreBatchRequest>) -> Result<Response<ScoreBatchResponse>, Status> {
        let items = request.into_inner().items;
        if items.len() > MAX_BATCH {
            return Err(Status::invalid_argument(format!(
                "batch of {} clips exceeds max_batch_size {MAX_BATCH}",
                items.len()
            )));
        }
        let done = tokio::task::spawn_blocking(move || {
            let watch = Stopwatch::start();
            let outcomes: Vec<ScoreBatchItem> = items
                .iter()
                .map(|item| ScoreBatchItem {
                    request_id: item.request_id.clone(),
                    outcome: Some(match score_one(item) {
                        Ok(result) => Outcome::Result(result),
                        Err(status) => Outcome::Error(ItemError {
                            code: status_code(&status),
                            message: status.message().to_string(),
                            ..Default::default()
                        }),
                    }),
                    ..Default::default()
                })
                .collect();
            ScoreBatchResponse { items: outcomes, timing: Some(watch.timing(SCOPE)), ..Default::default() }
        })
        .await
        .map_err(|e| Status::internal(format!("scoring failed: {e}")))?;
        Ok(Response::new(done))
    }

    /// Streaming is optional: DetectorInfo.streaming is unset, so the contract asks UNIMPLEMENTED here.
    type ScoreStreamStream = tonic::codegen::BoxStream<StreamScore>;

    async fn score_stream(
        &self,
        _: Request<tonic::Streaming<ScoreStreamRequest>>,
    ) -> Result<Response<Self::ScoreStreamStream>, Status> {
        Err(Status::unimplemented(format!("{NAME} does not stream (DetectorInfo.streaming is unset)")))
    }
}

fn status_code(status: &Status) -> i32 {
    match status.code() {
        Code::InvalidArgument => 3,
        _ => 13,
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    acme_rs::serve_main!(NAME, DetectorServiceServer<AcmeFlatness>, AcmeFlatness)
}
