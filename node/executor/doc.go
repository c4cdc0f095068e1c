// Package executor runs a lease's work: it turns a job's Spec into a running
// workload with the lease's limits, follows its logs, stops it with a grace
// period and packs what it wrote into a content-addressed output.
//
// The lifecycle is the same for every runtime:
//
//	Prepare (fetch and verify the artifact) -> Start -> Wait -> Outputs -> Remove
//	                                              \-> Stop (grace) -/
//
// Implementations live in subpackages: wasm runs WASI modules on wazero and
// needs nothing installed, so it is the devnet's and CPU-only providers'
// default; docker runs images pinned by digest on a Docker engine, hardened,
// with GPUs by UUID. executortest holds a scripted fake and a conformance
// suite every implementation runs.
//
// Containers outlive the daemon, so the docker executor also implements
// Reattacher: on start the node hands it the handles it persisted, and it
// takes those workloads over again and removes the ones nobody tracks.
//
// Artifacts (WASM modules, output tars) are addressed by CIDv1, raw codec,
// sha2-256: bytes are verified against their CID on every read, because they
// come from strangers on a peer-to-peer network.
package executor
