#!/bin/sh
# LocalStack runs this once it is ready: the warehouse bucket of the REST
# catalog, with EventBridge notifications on, so that a new table metadata
# file (*/metadata/*.metadata.json) reaches the planner through the stack's
# "Object Created" rule, as the README asks of a real warehouse bucket.
set -eu
awslocal s3api create-bucket --bucket warehouse >/dev/null 2>&1 || true
awslocal s3api put-bucket-notification-configuration --bucket warehouse \
	--notification-configuration '{"EventBridgeConfiguration": {}}'
echo "icekeeper: warehouse bucket s3://warehouse ready (EventBridge notifications on)"
