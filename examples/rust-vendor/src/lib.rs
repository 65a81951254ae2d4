//! Acme's VoxArena services in Rust, written from the contract alone (proto/voxarena/v1/*.proto):
//! no VoxArena SDK, stock tonic and prost. `contract` holds the rules the .proto comments state
//! (audio, ids, options, timing, status codes) once for both services; `formant` and `flatness` are
//! the vendor's own engines, which know nothing of VoxArena.

pub mod contract;
pub mod flatness;
pub mod formant;
pub mod server;

/// The messages and services compiled from the .proto files by build.rs.
pub mod pb {
    tonic::include_proto!("voxarena.v1");
}
