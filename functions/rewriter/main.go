// Command rewriter is the rewriter Lambda function: one SQS task per file
// group in, Parquet files and a descriptor out. It opens the catalog only
// for an orphan cleanup's tasks (to load the table right before deleting),
// and works only in mode active. It only wires configuration and clients;
// see package rewrite.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/envvars"
	"github.com/icekeeper/icekeeper/shared/stage"
	"github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

func main() {
	ctx := context.Background()
	deps, log := stage.Init(ctx, "rewriter", stage.ActiveOnly(rewriter.Needs))
	if gogc := stage.SetRewriterGC(os.Getenv); gogc > 0 {
		log.Info("Go GC percent set for a streaming rewriter", "gogc", gogc)
	}
	stage.IdleUnlessActive(deps, log, "rewriter")
	r, err := rewriter.Rewriter(deps)
	if err != nil {
		stage.Fail(log, "rewriter", err)
	}
	// Only an orphan cleanup's tasks load tables from the catalog.
	cat := rewriter.Catalog(deps)
	lambda.Start(rewriter.Handler{Rewrite: r, Delete: rewriter.Deleter(deps, cat), List: rewriter.Lister(deps, cat), Requeue: deps.Tasks, Heartbeat: envvars.TaskHeartbeat, Log: log}.Handle)
}
