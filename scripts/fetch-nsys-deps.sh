#!/usr/bin/env bash
# Download the Debian packages that scripts/nsys-env.sh unpacks (libdw1, libelf1) into DEBS_DIR.
# Run on a Debian/Ubuntu machine with network access; carry DEBS_DIR to the GPU machine.
set -euo pipefail
dest="${1:?usage: scripts/fetch-nsys-deps.sh DEBS_DIR}"
mkdir -p "$dest"
cd "$dest"
apt-get download libdw1 libelf1
ls -1 "$PWD"/*.deb
