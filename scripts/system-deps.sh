#!/usr/bin/env bash
# Make sure the Debian packages Brain OS needs are present: install them when running as root,
# otherwise print the exact command. Usage: system-deps.sh [--required] PACKAGE...
# With --required a package that is still missing fails the step; without it, only warns.
set -u
required=0
if [ "${1:-}" = "--required" ]; then required=1; shift; fi

present() {
    case "$1" in
        libportaudio2) ldconfig -p 2>/dev/null | grep -q 'libportaudio\.so\.2' ;;
        *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

missing=()
for package in "$@"; do
    present "$package" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing system packages: ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    still=()
    for package in "${missing[@]}"; do present "$package" || still+=("$package"); done
    missing=("${still[@]}")
    [ ${#missing[@]} -eq 0 ] && exit 0
fi

echo "missing system packages: ${missing[*]}; install them with:"
echo "    sudo apt-get install -y ${missing[*]}"
[ "$required" -eq 1 ] && exit 1
exit 0
