#!/usr/bin/env bash
# make moto-test: start moto's server (tests/moto/serve.py, from the pinned
# venv) on a free loopback port, run the given go test arguments with
# ICEKEEPER_SECOND_EMULATOR pointing at it, and stop it whatever happens.
# Usage: tests/moto/run.sh PYTHON GO_TEST_ARGS...
set -euo pipefail
python=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp -t moto-server.XXXXXX.log)
# At most 30 minutes, then the server stops by itself.
timeout 1800 "$python" "$here/serve.py" 127.0.0.1 "$port" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
	if "$python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/data.json', timeout=1)" 2>/dev/null; then
		break
	fi
	if ! kill -0 "$server" 2>/dev/null; then
		echo "moto-test: moto's server did not start:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.5
done
echo "moto-test: moto $("$python" -c 'import moto; print(moto.__version__)') on 127.0.0.1:$port (log: $log)"
ICEKEEPER_SECOND_EMULATOR="http://127.0.0.1:$port" go test "$@"
