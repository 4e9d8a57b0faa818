#!/usr/bin/env bash
# Regenerate the Ceph reference vectors under testdata/ with the real tools
# (Debian package ceph-base: crushtool, osdmaptool), then check Shoal
# against them. Review the diff before committing: a change in tests.out,
# pgs.out or objects.out means Ceph's answer changed, not Shoal's.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in crushtool osdmaptool; do
  command -v "$tool" >/dev/null || { echo "regen: $tool not found; apt-get install ceph-base" >&2; exit 1; }
done
dpkg-query -W -f='ceph-base ${Version}\n' ceph-base 2>/dev/null || true
go test -count=1 -run 'TestCrushtoolVectors|TestEditsMatchCrushtool' ./crush -args -update
go test -count=1 -run 'TestOsdmaptoolVectors' ./osdmap -args -update
git status --short testdata
