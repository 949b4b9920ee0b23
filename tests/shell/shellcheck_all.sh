#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# unit.shellcheck: every shell file of the tree - *.sh, *.bash and the
# scripts whose first line names a shell - passes shellcheck with the
# settings of .shellcheckrc.  Prints the files checked; fails on a finding.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
if [[ -e .git ]]; then
	mapfile -t all < <(git ls-files)
else
	mapfile -t all < <(find . -path ./build -prune -o -type f -print | sed 's|^\./||')
fi
files=()
for f in "${all[@]}"; do
	case $f in
	*.sh | *.bash) files+=("$f") ;;
	*) [[ -f $f ]] && head -n1 "$f" | grep -qE '^#!.*(/|env )(ba|busybox )?sh' &&
		files+=("$f") ;;
	esac
done
echo "shellcheck: ${#files[@]} files"
shellcheck "${files[@]}"
echo "shellcheck: clean"
