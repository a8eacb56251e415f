// Package perf parses `perf script` text (Linux perf's samples, one
// header line per sample, "comm pid/tid [cpu] time: period event:", and
// its stack lines under it, leaf first) byte-compatibly with Brendan
// Gregg's stackcollapse-perf.pl: a stack folds to the frames, names and
// annotations the Perl script would print for it. It owns:
//
//   - Parse, which streams a profile's timed samples into a fleetscope
//     dictionary (folded as stackcollapse-perf.pl folds without options;
//     every event kept), in chunks parsed on all cores, bounded for the
//     whole process by LimitCPU;
//   - Collapse, stackcollapse-perf.pl itself: folded text, byte for byte
//     the script's output with the same flags (Options: --pid, --tid,
//     --kernel, --jit, --addrs, the event filter), which the tests check
//     against the script's own outputs on the shared corpus;
//   - Detect, how sure a head of input is perf script, for format
//     detection.
//
// It reads decompressed text only; storage and the choice of format are
// ingest's.
package perf
