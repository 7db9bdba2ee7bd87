// Package mlxfmt reads and writes the text formats of NVIDIA's firmware
// configuration tools: mlxconfig (MFT) and mstconfig (mstflint), which share
// one source, and MFT's `mst status -v`.
//
// Everything here is pure: rdmaform's firmware provider runs the tools through
// host.Host and hands the bytes to ParseQuery; the simulated host renders the
// same bytes with RenderQuery and RenderSet. The renderers are byte-exact for
// each version family (Layout G1..G6), trailing spaces included, so the parser
// is always tested against what a real host prints.
//
// Values are compared by meaning, never by spelling: an operator may write
// ETH, eth, 2 or ETH(2) in a spec, and all of them equal an observed ETH(2).
package mlxfmt
