//! What both services' `main` shares: the command line (`--port N`, `--healthcheck`), grpc.health.v1,
//! the message limit, and a graceful stop on SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::process::ExitCode;

use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

pub struct Args {
    pub port: u16,
    pub healthcheck: bool,
}

/// `--port N` (default 50051, the port every VoxArena image serves on) and `--healthcheck`.
pub fn args() -> Result<Args, String> {
    let mut parsed = Args { port: 50051, healthcheck: false };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--port" => {
                let value = it.next().ok_or("--port needs a value")?;
                parsed.port = value.parse().map_err(|_| format!("--port: not a port number: {value:?}"))?;
            }
            "--healthcheck" => parsed.healthcheck = true,
            other => return Err(format!("unknown argument {other:?}; usage: [--port N] [--healthcheck]")),
        }
    }
    Ok(parsed)
}

pub fn address(port: u16) -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], port))
}

/// The image's HEALTHCHECK: exit 0 when the service on `port` answers grpc.health.v1 SERVING.
pub async fn healthcheck(port: u16) -> ExitCode {
    let status = async {
        let channel = tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{port}")).ok()?.connect().await.ok()?;
        let mut client = HealthClient::new(channel);
        let reply = client.check(HealthCheckRequest { service: String::new() }).await.ok()?;
        Some(reply.into_inner().status)
    };
    match status.await {
        Some(s) if s == ServingStatus::Serving as i32 => ExitCode::SUCCESS,
        other => {
            eprintln!("not serving: {other:?}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM (docker stop) or Ctrl-C: the server then stops taking calls and drains.
pub async fn stop_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
    eprintln!("signal received, draining");
}

/// The `main` of a service: the command line, `--healthcheck`, then grpc.health.v1 and `$server`
/// (a tonic service server, its message limits set) until SIGTERM. A macro: tonic's generated servers
/// share no trait that names all `add_service` needs.
#[macro_export]
macro_rules! serve_main {
    ($name:expr, $server:ty, $model:expr) => {{
        let args = match $crate::server::args() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{}: {e}", $name);
                return std::process::ExitCode::from(2);
            }
        };
        if args.healthcheck {
            return $crate::server::healthcheck(args.port).await;
        }
        let (mut health, health_service) = tonic_health::server::health_reporter();
        health.set_serving::<$server>().await;
        let limit = $crate::contract::MAX_MESSAGE_BYTES;
        let service = <$server>::new($model).max_decoding_message_size(limit).max_encoding_message_size(limit);
        eprintln!("{}: SERVING on port {}", $name, args.port);
        let served = tonic::transport::Server::builder()
            .add_service(health_service)
            .add_service(service)
            .serve_with_shutdown($crate::server::address(args.port), $crate::server::stop_signal())
            .await;
        match served {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{}: {e}", $name);
                std::process::ExitCode::FAILURE
            }
        }
    }};
}
