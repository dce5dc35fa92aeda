#!/bin/sh
# Prints the path of a Python 3.13 interpreter for LocalStack's venv, or
# fails saying why. localstack-core 4.14 needs 3.13 at run time, whatever
# its Requires-Python (>=3.10) says: it uses PEP 695 generics (3.12) and
# `threading.Lock | None` in annotations evaluated at import, which only
# works where threading.Lock is a class (3.13). See README.md here.
# LOCALSTACK_PYTHON overrides the search.
set -eu
for p in ${LOCALSTACK_PYTHON:-} python3.13 python3; do
	[ -n "$p" ] || continue
	path=$(command -v "$p" 2>/dev/null) || continue
	if "$path" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
		echo "$path"
		exit 0
	fi
done
# pyenv's interpreters (the development machines have 3.13 there, not on PATH).
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for path in "$root"/versions/3.13*/bin/python3; do
	if [ -x "$path" ] && "$path" -c 'import venv, ensurepip' 2>/dev/null; then
		echo "$path"
		exit 0
	fi
done
echo "localstack: no Python 3.13 found (PATH, pyenv); set LOCALSTACK_PYTHON to one" >&2
exit 1
