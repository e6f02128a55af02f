# Source this file to make the Nsight Systems bundled with Nsight Compute usable:
#
#     source scripts/nsys-env.sh DEBS_DIR
#
# The nsys that ships inside Nsight Compute 2025.3 (under host/target-linux-x64) needs libdw and
# libelf, which some images lack, and looks for its host tools under host/host-linux-x64. DEBS_DIR
# holds the Debian packages libdw1 and libelf1 (fetch them on any Debian machine with
# `scripts/fetch-nsys-deps.sh DEBS_DIR`). They are unpacked under /tmp, never into /.
# Afterwards `nsys profile`, `nsys export`, `nsys stats` and `nsys recipe` work.
# Set COACH_NCU_ROOT to point at another Nsight Compute installation.

_coach_debs="${1:?usage: source scripts/nsys-env.sh DEBS_DIR}"
_coach_ncu_root="${COACH_NCU_ROOT:-}"
if [ -z "$_coach_ncu_root" ]; then
    for _d in /opt/nvidia/nsight-compute/*/; do _coach_ncu_root="${_d%/}"; done
fi
if command -v nsys >/dev/null 2>&1 && nsys --version >/dev/null 2>&1; then
    :   # a working nsys is already on PATH
elif [ -n "$_coach_ncu_root" ] && [ -d "$_coach_ncu_root/host" ]; then
    mkdir -p /tmp/coach-nsys-libs
    for _f in "$_coach_debs"/*.deb; do
        [ -e "$_f" ] && dpkg -x "$_f" /tmp/coach-nsys-libs
    done
    export LD_LIBRARY_PATH="/tmp/coach-nsys-libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    _h="$_coach_ncu_root/host"
    if [ ! -e "$_h/host-linux-x64" ] && [ -d "$_h/linux-desktop-glibc_2_11_3-x64" ]; then
        ln -sfn "$_h/linux-desktop-glibc_2_11_3-x64" "$_h/host-linux-x64"
    fi
    export PATH="$_h/target-linux-x64:$PATH"
else
    echo "nsys-env.sh: no Nsight Compute installation found under /opt/nvidia/nsight-compute" >&2
fi
unset _coach_debs _coach_ncu_root _d _f _h
