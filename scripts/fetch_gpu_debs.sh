#!/usr/bin/env bash
# Fetches, here, the few Debian 12 packages a GPU host lacks to build smelt's CUDA configuration
# (scripts/gpu_check.sh): fmt, spdlog and xxHash (linked) and the header-only nlohmann-json, doctest
# and CLI11; about 1.3 MiB of .deb files into .debs/ (git-ignored), which the device tool carries
# (`carry: [".debs"]`). gpu_check.sh unpacks them with dpkg -x into a private prefix, never into /.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libfmt-dev libfmt9 libspdlog-dev libspdlog1.10 libxxhash-dev libxxhash0 nlohmann-json3-dev doctest-dev libcli11-dev)
mkdir -p .debs
rm -f .debs/*.deb
(cd .debs && apt-get download "${packages[@]}")
ls -l .debs
du -sh .debs
