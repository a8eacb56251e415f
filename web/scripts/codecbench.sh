#!/usr/bin/env bash
# The dashboard's hand-written wire decoders against protobuf-es on the
# benchmark profile's answers (docs/architecture.md, "Wire codecs"): the
# Go test TestCodecAnswers writes the answers as the server computes them,
# then scripts/codecbench.mjs decodes them in fresh Node processes. Needs
# ../shared (or SHARED) and web/node_modules (build.sh --deps).
#
#   bash web/scripts/codecbench.sh [RUNS] [ANSWER]   (ANSWER: flame-tree, heatmap-10min, ...)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT"
SHARED=${SHARED:-$ROOT/../shared}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
FLEETSCOPE_SHARED=$SHARED FLEETSCOPE_CODEC_ANSWERS=$dir go test ./api -run '^TestCodecAnswers$' -count=1 >/dev/null
cd web && node scripts/codecbench.mjs "$dir" "${1:-9}" "${2:-}"
