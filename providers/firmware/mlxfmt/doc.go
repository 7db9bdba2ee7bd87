// Package mlxfmt reads the text formats of NVIDIA's firmware configuration
// tools: mlxconfig (MFT) and mstconfig (mstflint), which share one source,
// and MFT's `mst status -v`.
//
// Everything here is pure: rdmaform's firmware provider runs the tools
// through host.Host and hands the bytes to ParseQuery. The parser reads
// every version family's layout without relying on column widths. It is
// tested on real outputs (testdata/real, TestRealCorpus); the simulated
// host prints with a writer of its own (sim/mlxemu), which shares no code
// with this package, so a layout read wrong here is not also printed
// wrong there.
//
// Values are compared by meaning, never by spelling: an operator may write
// ETH, eth, 2 or ETH(2) in a spec, and all of them equal an observed ETH(2).
package mlxfmt
