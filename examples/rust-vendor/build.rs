//! Compiles the VoxArena contract (the .proto files) into Rust at build time: the only thing of
//! VoxArena this crate uses. PROTO_DIR says where the files are (default: this repository's proto/).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::var("PROTO_DIR").unwrap_or_else(|_| "../../proto".to_string());
    let files: Vec<String> = ["common", "generator", "detector"]
        .iter()
        .map(|name| format!("{dir}/voxarena/v1/{name}.proto"))
        .collect();
    for file in &files {
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rerun-if-env-changed=PROTO_DIR");
    tonic_build::configure().build_client(true).compile_protos(&files, &[dir])?;
    Ok(())
}
