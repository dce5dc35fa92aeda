// Command rewriter is the rewriter Lambda function: one SQS task per file
// group in, Parquet files and a descriptor out. It opens the catalog only
// for an orphan cleanup's tasks (to load the table right before deleting),
// and works only in mode active. It only wires configuration and clients;
// see package rewrite.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/envvars"
	"github.com/icekeeper/icekeeper/shared/handler/rewriter"
	"github.com/icekeeper/icekeeper/shared/lambdamain"
	"github.com/icekeeper/icekeeper/shared/wiring/rewriting"
)

func main() {
	ctx := context.Background()
	deps, log := lambdamain.Init(ctx, "rewriter", lambdamain.ActiveOnly(rewriting.Needs))
	lambdamain.IdleUnlessActive(deps, log, "rewriter")
	r, err := rewriting.Rewriter(deps)
	if err != nil {
		lambdamain.Fail(log, "rewriter", err)
	}
	// Only an orphan cleanup's tasks load tables from the catalog.
	cat := rewriting.Catalog(deps)
	lambda.Start(rewriter.Handler{Rewrite: r, Delete: rewriting.Deleter(deps, cat), List: rewriting.Lister(deps, cat), Requeue: deps.Tasks, Heartbeat: envvars.TaskHeartbeat, Log: log}.Handle)
}
