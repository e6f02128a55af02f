#!/usr/bin/env bash
# Pack a recorded folder into DEST_DIR/NAME.tgz, or, when the archive is larger than PART_MIB MiB
# (default 15), into parts of at most that size: DEST_DIR/NAME.tgz.0, NAME.tgz.1, ... (at most ten),
# so that every file stays under a per-file transfer limit.
#
#     scripts/pack-recording.sh SRC_DIR DEST_DIR NAME [PART_MIB]
#
# Unpack by concatenating the parts in order: `cat NAME.tgz NAME.tgz.[0-9] 2>/dev/null | tar -xz`,
# or give DEST_DIR to `coach record --import`, which does that itself.
set -euo pipefail
src="${1:?usage: scripts/pack-recording.sh SRC_DIR DEST_DIR NAME [PART_MIB]}"
dest="${2:?usage: scripts/pack-recording.sh SRC_DIR DEST_DIR NAME [PART_MIB]}"
name="${3:?usage: scripts/pack-recording.sh SRC_DIR DEST_DIR NAME [PART_MIB]}"
part_mib="${4:-15}"
[ -d "$src" ] || { echo "pack-recording.sh: $src is not a folder" >&2; exit 2; }
mkdir -p "$dest"
src="$(cd "$src" && pwd)"
dest="$(cd "$dest" && pwd)"
limit=$((part_mib * 1024 * 1024))
tmp="$dest/.$name.tgz.partial"
trap 'rm -f "$tmp"' EXIT
tar -czf "$tmp" -C "$(dirname "$src")" "$(basename "$src")"
rm -f "$dest/$name.tgz" "$dest/$name.tgz".[0-9]
size=$(stat -c %s "$tmp")
if (( size <= limit )); then
    mv "$tmp" "$dest/$name.tgz"
else
    split -b "$limit" -d -a 1 "$tmp" "$dest/$name.tgz."
fi
ls -l "$dest/$name.tgz"*
